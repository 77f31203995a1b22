// An error type the user does not own (`std::io::Error`, `String`) cannot be given
// `From<resilient::Rejected>`; wrapped in one of their own, it can, under every attribute.
use resilient::{breaker, race_retry, too_busy, Rejected};

#[derive(Debug)]
enum ReadError {
    Io(std::io::Error),
    Refused(Rejected),
}

impl From<std::io::Error> for ReadError {
    fn from(error: std::io::Error) -> Self {
        ReadError::Io(error)
    }
}

impl From<Rejected> for ReadError {
    fn from(rejected: Rejected) -> Self {
        ReadError::Refused(rejected)
    }
}

type Result<T> = std::result::Result<T, ReadError>;

#[breaker(error_threshold = 3)]
async fn read(ok: bool) -> Result<u32> {
    if ok {
        Ok(1)
    } else {
        Err(std::io::Error::other("disk"))?
    }
}

#[too_busy(max_in_flight = 1)]
async fn handle() -> Result<u32> {
    tokio::task::yield_now().await;
    Ok(2)
}

#[race_retry(total = "450ms")]
async fn lookup() -> std::result::Result<u32, ReadError> {
    Ok(3)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(read(true).await.unwrap(), 1);
    assert!(matches!(read(false).await, Err(ReadError::Io(_))));
    let (a, b) = tokio::join!(handle(), handle());
    assert_eq!(a.unwrap(), 2);
    assert!(matches!(b, Err(ReadError::Refused(r)) if r.is_too_busy()));
    assert_eq!(lookup().await.unwrap(), 3);
}
