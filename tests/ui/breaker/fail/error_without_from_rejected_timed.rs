use resiliency::breaker;

#[derive(Debug)]
struct MyError;

#[breaker(timeout = "1s")]
async fn charge() -> Result<u32, MyError> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
