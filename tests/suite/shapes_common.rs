//! Shapes every attribute must accept, each in a module of its own, compiled as this test and run:
//! compound durations, methods of generic impls, return-type coercions, one-expression bodies
//! with no warning, foreign errors wrapped in the user's own. Errors of the shared argument and
//! duration parser are in `tests/ui/common/fail`.

// Durations may be compound: parts from the largest unit to the smallest, each once.
mod compound_durations {
    use std::time::Duration;

    use resiliency::{breaker, race_retry, too_busy, Rejected};

    #[breaker(name = "compound", error_timeout = "1m30s", timeout = "2m 30s")]
    async fn charge() -> Result<u32, Rejected> {
        Ok(1)
    }

    #[race_retry(retries = 1, after = "1m", total = "1h2m3s4ms")]
    async fn hang() -> Result<u32, Rejected> {
        std::future::pending().await
    }

    #[too_busy(max_lag = "1s500ms", max_latency = "1m0.5s")]
    async fn handle() -> Result<u32, Rejected> {
        Ok(2)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(charge().await.unwrap(), 1);
        let breaker = resiliency::breaker::get("compound").unwrap();
        assert_eq!(breaker.error_timeout(), Duration::from_secs(90));

        let start = tokio::time::Instant::now();
        assert!(hang().await.unwrap_err().is_deadline());
        assert_eq!(start.elapsed(), Duration::from_millis(3_723_004));

        assert_eq!(handle().await.unwrap(), 2);
    }
}

// Methods of a generic impl and of a trait impl for a generic type, under all three attributes:
// one policy per method (shared by every `T`), named by the method's path with `<_>`.
mod generic_impl_methods {
    #![deny(warnings)]

    use std::marker::PhantomData;

    use resiliency::{breaker, race_retry, too_busy, Rejected};

    struct Client<T> {
        base: String,
        marker: PhantomData<T>,
    }

    impl<T: Default + std::fmt::Debug + Send + Sync> Client<T> {
        #[breaker]
        async fn get(&self, id: u32) -> Result<String, Rejected> {
            Ok(format!("{}{id}", self.base))
        }

        #[too_busy]
        async fn make(&self) -> Result<T, Rejected> {
            Ok(T::default())
        }

        #[race_retry(total = "1s", after = "5ms")]
        async fn raced<U: Clone + std::fmt::Debug>(&self, u: U) -> Result<String, Rejected> {
            Ok(format!("{}{u:?}{:?}", self.base, T::default()))
        }
    }

    trait Store {
        async fn load(&self, key: &str) -> Result<usize, Rejected>;
    }

    impl<T: Sync> Store for Client<T> {
        #[race_retry(total = "1s", after = "5ms")]
        #[breaker]
        async fn load(&self, key: &str) -> Result<usize, Rejected> {
            Ok(key.len() + self.base.len())
        }
    }

    #[tokio::test]
    async fn runs() {
        let a: Client<u8> = Client {
            base: "a".into(),
            marker: PhantomData,
        };
        let b: Client<String> = Client {
            base: "b".into(),
            marker: PhantomData,
        };
        assert_eq!(a.get(1).await.unwrap(), "a1");
        assert_eq!(b.get(2).await.unwrap(), "b2");
        assert_eq!(a.make().await.unwrap(), 0);
        assert_eq!(b.make().await.unwrap(), "");
        assert_eq!(a.raced(3u64).await.unwrap(), "a30");
        assert_eq!(b.load("k").await.unwrap(), 2);
        // The crate's name is this test's, then this module's path; after it, the methods'.
        let names = resiliency::breaker::names();
        assert!(
            names.iter().any(|n| n.ends_with("::Client<_>::get")),
            "{names:?}"
        );
        assert!(
            names
                .iter()
                .any(|n| n.contains("::Client<_> as ") && n.ends_with("::Store>::load")),
            "{names:?}"
        );
    }
}

// The body's result gets the fn's return type as its expected type, as it would without the
// attribute: `&String` coerces to `&str`, `Box<Concrete>` to `Box<dyn Trait>`, in the tail
// expression and in an early `return`.
mod return_coercion {
    use resiliency::{breaker, race_retry, too_busy, Rejected};

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

    #[tokio::test]
    async fn runs() {
        let names = Names("ada".to_string());
        assert_eq!(names.first().await.unwrap(), "ada");
        assert_eq!(names.second(true).await.unwrap(), "ada");
        assert_eq!(names.second(false).await.unwrap(), "ada");
        assert_eq!(names.third().await.unwrap(), "ada");
        assert!(names.failing().await.is_err());
    }
}

// Bodies of one expression (`{ Ok(x) }`) and inner attributes (`#![allow(..)]`) under each
// attribute compile without a warning in the user's code.
#[rustfmt::skip] // The one-line bodies are the case.
mod single_expression_bodies {
    #![deny(warnings)]

    use resiliency::{breaker, race_retry, too_busy, Rejected};

    #[breaker]
    async fn guarded(x: u32) -> Result<u32, Rejected> { Ok(x) }

    #[too_busy]
    async fn shed(x: u32) -> Result<u32, Rejected> { Ok(x) }

    #[race_retry(total = "1s")]
    async fn raced(x: &str) -> Result<&str, Rejected> { Ok(x) }

    #[breaker]
    #[too_busy]
    #[race_retry(total = "1s")]
    async fn all(x: u32) -> Result<u32, Rejected> {
        #![allow(unused_variables)]
        let unused = 1;
        Ok(x)
    }

    #[tokio::test]
    async fn runs() {
        assert_eq!(guarded(1).await.unwrap(), 1);
        assert_eq!(shed(2).await.unwrap(), 2);
        assert_eq!(raced("3").await.unwrap(), "3");
        assert_eq!(all(4).await.unwrap(), 4);
    }
}

// An error type the user does not own (`std::io::Error`, `String`) cannot be given
// `From<resiliency::Rejected>`; wrapped in one of their own, it can, under every attribute.
mod wrapped_foreign_error {
    use resiliency::{breaker, race_retry, too_busy, Rejected};

    #[derive(Debug)]
    enum ReadError {
        // Matched by the test, never read: the warning would be about the test, not the shape.
        #[allow(dead_code)]
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

    #[tokio::test]
    async fn runs() {
        assert_eq!(read(true).await.unwrap(), 1);
        assert!(matches!(read(false).await, Err(ReadError::Io(_))));
        let (a, b) = tokio::join!(handle(), handle());
        assert_eq!(a.unwrap(), 2);
        assert!(matches!(b, Err(ReadError::Refused(r)) if r.is_too_busy()));
        assert_eq!(lookup().await.unwrap(), 3);
    }
}
