use resiliency::breaker;

#[derive(Debug)]
struct MyError;

#[breaker(count_if = |_e: &MyError| true)]
async fn charge() -> Result<u32, MyError> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
