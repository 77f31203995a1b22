// An expression is passed to the builder method of its name, which takes a `u32` here: a `usize`
// is a type error at the expression.
use resiliency::{breaker, Rejected};

#[breaker(error_threshold = "3".len())]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
