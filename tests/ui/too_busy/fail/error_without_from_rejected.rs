use resiliency::too_busy;

#[derive(Debug)]
struct MyError;

#[too_busy]
async fn handler() -> Result<u32, MyError> {
    Ok(1)
}

fn main() {}
