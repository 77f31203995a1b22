// `max_in_flight` takes a `u32`: a const of another type is a type error at the expression.
use resiliency::{too_busy, Rejected};

const LIMIT: usize = 8;

#[too_busy(max_in_flight = LIMIT)]
async fn handler() -> Result<(), Rejected> {
    Ok(())
}

fn main() {
    let _ = handler();
}
