use resiliency::breaker;

#[derive(Debug)]
struct MyError;

#[breaker(error_threshold = 3)]
async fn charge() -> Result<u32, MyError> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
