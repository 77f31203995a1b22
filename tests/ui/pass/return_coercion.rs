// The body's result gets the fn's return type as its expected type, as it would without the
// attribute: `&String` coerces to `&str`, `Box<Concrete>` to `Box<dyn Trait>`, in the tail
// expression and in an early `return`.
use resilient::{breaker, race_retry, too_busy, Rejected};

struct Names(String);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl Names {
    #[breaker(error_threshold = 3)]
    async fn first(&self) -> Result<&str, Rejected> {
        Ok(&self.0)
    }

    #[too_busy(max_in_flight = 8)]
    async fn second(&self, early: bool) -> Result<&str, Rejected> {
        if early {
            return Ok(&self.0);
        }
        Ok(&self.0)
    }

    #[race_retry(total = "1s")]
    async fn third(&self) -> Result<&str, Rejected> {
        Ok(&self.0)
    }

    #[race_retry(total = "1s")]
    #[breaker(error_threshold = 3)]
    async fn failing(&self) -> Result<u32, BoxError> {
        Err(Box::new(std::fmt::Error))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let names = Names("ada".to_string());
    assert_eq!(names.first().await.unwrap(), "ada");
    assert_eq!(names.second(true).await.unwrap(), "ada");
    assert_eq!(names.second(false).await.unwrap(), "ada");
    assert_eq!(names.third().await.unwrap(), "ada");
    assert!(names.failing().await.is_err());
}
