use resiliency::breaker;

#[derive(Debug)]
struct MyError;

#[breaker(key = host)]
async fn charge(host: &str) -> Result<u32, MyError> {
    Ok(1)
}

fn main() {
    let _ = charge("a");
}
