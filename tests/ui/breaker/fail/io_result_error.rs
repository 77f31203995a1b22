// `std::io::Error` is not the user's type: the help must not suggest implementing a trait for it.
use resiliency::breaker;

#[breaker(error_threshold = 3)]
async fn read() -> std::io::Result<u32> {
    Ok(1)
}

fn main() {
    let _ = read();
}
