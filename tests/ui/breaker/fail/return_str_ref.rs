use resiliency::breaker;

#[breaker(error_threshold = 3)]
async fn charge() -> &'static str {
    "ok"
}

fn main() {
    let _ = charge();
}
