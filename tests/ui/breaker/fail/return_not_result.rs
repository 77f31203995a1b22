use resiliency::breaker;

#[breaker(error_threshold = 3)]
async fn charge() -> u32 {
    1
}

fn main() {
    let _ = charge();
}
