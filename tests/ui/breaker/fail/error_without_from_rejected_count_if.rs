use resiliency::breaker;

#[derive(Debug)]
struct MyError;

fn is_transient(_: &MyError) -> bool {
    true
}

#[breaker(count_if = is_transient)]
async fn charge() -> Result<u32, MyError> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
