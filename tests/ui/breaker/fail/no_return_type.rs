use resiliency::breaker;

#[breaker(error_threshold = 3)]
async fn charge() {}

fn main() {
    let _ = charge();
}
