// An `Option` cannot key a breaker; with a key for `None`, it can.
use resilient::{breaker, Rejected};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

struct Url(Option<&'static str>);

impl Url {
    fn host_str(&self) -> Option<&str> {
        self.0
    }
}

#[breaker(key = url.host_str().unwrap_or("none"), error_threshold = 1, error_timeout = "30s")]
async fn get(url: &Url, ok: bool) -> Result<u32, BoxError> {
    if ok {
        Ok(200)
    } else {
        Err("503".into())
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert!(get(&Url(None), false).await.is_err());
    let refused = get(&Url(None), true).await.unwrap_err();
    assert_eq!(refused.downcast_ref::<Rejected>().unwrap().key(), Some("none"));
    assert_eq!(get(&Url(Some("a")), true).await.unwrap(), 200);
}
