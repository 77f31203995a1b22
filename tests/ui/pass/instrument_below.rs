use resilient::{breaker, Rejected};

#[breaker(error_threshold = 2)]
#[tracing::instrument(skip(secret))]
async fn login(user: &str, secret: String) -> Result<usize, Rejected> {
    tracing::info!("checking");
    Ok(user.len() + secret.len())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(login("ann", "pw".into()).await.unwrap(), 5);
}
