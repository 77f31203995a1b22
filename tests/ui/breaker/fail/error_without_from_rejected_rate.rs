use resiliency::breaker;

#[derive(Debug)]
struct MyError;

#[breaker(failure_rate = 0.5)]
async fn charge() -> Result<u32, MyError> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
