//! Shapes `#[breaker]` must accept, each in a module of its own, compiled as this test and run:
//! error types (`anyhow`, boxed, a user enum with `count_if`), generics, `impl Trait` and pattern
//! arguments, methods and trait impls, keys, stacking with `#[tracing::instrument]`, `Send`
//! futures, kept docs and visibility. Errors are in `tests/ui/breaker/fail`.

mod anyhow_result {
    use resiliency::{breaker, Rejected};

    #[breaker(error_threshold = 1, error_timeout = "30s")]
    async fn fetch(ok: bool) -> anyhow::Result<u32> {
        if ok {
            Ok(7)
        } else {
            anyhow::bail!("upstream failed")
        }
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(true).await.unwrap(), 7);
        assert_eq!(
            fetch(false).await.unwrap_err().to_string(),
            "upstream failed"
        );
        let refused = fetch(true).await.unwrap_err();
        assert!(refused
            .downcast_ref::<Rejected>()
            .unwrap()
            .is_circuit_open());
    }
}

mod boxed_error {
    use resiliency::{breaker, Rejected};

    type BoxError = Box<dyn std::error::Error + Send + Sync>;

    #[breaker(error_threshold = 1, error_timeout = "30s")]
    async fn fetch(ok: bool) -> Result<&'static str, BoxError> {
        if ok {
            Ok("data")
        } else {
            Err("upstream failed".into())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(true).await.unwrap(), "data");
        assert!(fetch(false).await.is_err());
        let refused = fetch(true).await.unwrap_err();
        assert!(refused
            .downcast_ref::<Rejected>()
            .unwrap()
            .is_circuit_open());
    }
}

mod count_if {
    use resiliency::{breaker, Rejected};

    #[derive(Debug)]
    enum FetchError {
        NotFound,
        Unavailable,
        Refused(Rejected),
    }

    impl From<Rejected> for FetchError {
        fn from(r: Rejected) -> Self {
            FetchError::Refused(r)
        }
    }

    fn is_transient(e: &FetchError) -> bool {
        matches!(e, FetchError::Unavailable)
    }

    #[breaker(error_threshold = 1, error_timeout = "30s", count_if = is_transient)]
    async fn fetch(e: Option<FetchError>) -> Result<u32, FetchError> {
        match e {
            Some(e) => Err(e),
            None => Ok(1),
        }
    }

    #[breaker(error_threshold = 1, count_if = |e: &FetchError| !matches!(e, FetchError::NotFound))]
    async fn fetch_closure(e: Option<FetchError>) -> Result<u32, FetchError> {
        match e {
            Some(e) => Err(e),
            None => Ok(2),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        // A miss does not count: the breaker stays closed.
        assert!(matches!(
            fetch(Some(FetchError::NotFound)).await,
            Err(FetchError::NotFound)
        ));
        assert_eq!(fetch(None).await.unwrap(), 1);
        // An outage does: the breaker opens.
        assert!(matches!(
            fetch(Some(FetchError::Unavailable)).await,
            Err(FetchError::Unavailable)
        ));
        assert!(matches!(fetch(None).await, Err(FetchError::Refused(r)) if r.is_circuit_open()));

        assert!(fetch_closure(Some(FetchError::NotFound)).await.is_err());
        assert_eq!(fetch_closure(None).await.unwrap(), 2);
    }
}

mod crate_path {
    use resiliency::{breaker, Rejected};

    #[breaker(crate = "::resiliency", error_threshold = 2)]
    async fn charge(cents: u64) -> Result<u64, Rejected> {
        Ok(cents)
    }

    #[test]
    fn runs() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        assert_eq!(runtime.block_on(charge(3)).unwrap(), 3);
    }
}

mod generic_where {
    use std::fmt::Display;

    use resiliency::{breaker, Rejected};

    #[breaker(error_threshold = 2)]
    async fn describe<T, U>(label: T, items: Vec<U>) -> Result<String, Rejected>
    where
        T: Display + Send,
        U: Display + Send,
    {
        let items: Vec<String> = items.iter().map(ToString::to_string).collect();
        Ok(format!("{label}: {}", items.join(", ")))
    }

    #[tokio::test]
    async fn runs() {
        assert_eq!(describe("ids", vec![1, 2]).await.unwrap(), "ids: 1, 2");
        assert_eq!(describe('c', vec!["x"]).await.unwrap(), "c: x");
    }
}

mod impl_trait_args {
    use resiliency::{breaker, Rejected};

    #[breaker(error_threshold = 2)]
    async fn total(
        prices: impl IntoIterator<Item = u64>,
        label: impl AsRef<str>,
    ) -> Result<String, Rejected> {
        let sum: u64 = prices.into_iter().sum();
        Ok(format!("{}={sum}", label.as_ref()))
    }

    #[tokio::test]
    async fn runs() {
        assert_eq!(total([1, 2, 3], "sum").await.unwrap(), "sum=6");
        assert_eq!(
            total(vec![10], String::from("one")).await.unwrap(),
            "one=10"
        );
    }
}

mod instrument_above {
    use resiliency::{breaker, Rejected};

    #[tracing::instrument(skip(secret))]
    #[breaker(error_threshold = 2)]
    async fn login(user: &str, secret: String) -> Result<usize, Rejected> {
        tracing::info!("checking");
        Ok(user.len() + secret.len())
    }

    #[tokio::test]
    async fn runs() {
        assert_eq!(login("ann", "pw".into()).await.unwrap(), 5);
    }
}

mod instrument_below {
    use resiliency::{breaker, Rejected};

    #[breaker(error_threshold = 2)]
    #[tracing::instrument(skip(secret))]
    async fn login(user: &str, secret: String) -> Result<usize, Rejected> {
        tracing::info!("checking");
        Ok(user.len() + secret.len())
    }

    #[tokio::test]
    async fn runs() {
        assert_eq!(login("ann", "pw".into()).await.unwrap(), 5);
    }
}

// An `Option` cannot key a breaker; with a key for `None`, it can.
mod keyed_option {
    use resiliency::{breaker, Rejected};

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

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert!(get(&Url(None), false).await.is_err());
        let refused = get(&Url(None), true).await.unwrap_err();
        assert_eq!(
            refused.downcast_ref::<Rejected>().unwrap().key(),
            Some("none")
        );
        assert_eq!(get(&Url(Some("a")), true).await.unwrap(), 200);
    }
}

mod keyed_owned_string {
    use resiliency::{breaker, Rejected};

    type BoxError = Box<dyn std::error::Error + Send + Sync>;

    // The key is read before the body runs; the body then moves `host`.
    #[breaker(key = host, error_threshold = 1, error_timeout = "30s")]
    async fn get(host: String, ok: bool) -> Result<String, BoxError> {
        if ok {
            let owned: String = host;
            Ok(owned)
        } else {
            Err(format!("{host} failed").into())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(get("a".to_string(), true).await.unwrap(), "a");
        assert_eq!(
            get("a".to_string(), false).await.unwrap_err().to_string(),
            "a failed"
        );
        let refused = get("a".to_string(), true).await.unwrap_err();
        assert_eq!(refused.downcast_ref::<Rejected>().unwrap().key(), Some("a"));
        assert_eq!(get("b".to_string(), true).await.unwrap(), "b");
    }
}

mod keyed_str {
    use resiliency::{breaker, Rejected};

    type BoxError = Box<dyn std::error::Error + Send + Sync>;

    #[breaker(key = host, error_threshold = 1, error_timeout = "30s")]
    async fn get(host: &str, ok: bool) -> Result<String, BoxError> {
        if ok {
            Ok(format!("{host}: 200"))
        } else {
            Err("503".into())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert!(get("a", false).await.is_err());
        // `a` is open now; `b` has a breaker of its own.
        let refused = get("a", true).await.unwrap_err();
        let refused = refused.downcast_ref::<Rejected>().unwrap();
        assert!(refused.is_circuit_open());
        assert_eq!(refused.key(), Some("a"));
        assert_eq!(get("b", true).await.unwrap(), "b: 200");
    }
}

mod method_self {
    use resiliency::{breaker, Rejected};

    struct Client {
        base: String,
    }

    impl Client {
        #[breaker(error_threshold = 2)]
        async fn get(&self, path: &str) -> Result<String, Rejected> {
            Ok(format!("{}{path}", self.base))
        }
    }

    #[tokio::test]
    async fn runs() {
        let client = Client {
            base: "http://127.0.0.1".into(),
        };
        assert_eq!(client.get("/a").await.unwrap(), "http://127.0.0.1/a");
    }
}

mod question_mark_return {
    use resiliency::{breaker, Rejected};

    #[derive(Debug, PartialEq)]
    enum ParseError {
        Empty,
        NotANumber,
        Refused,
    }

    impl From<Rejected> for ParseError {
        fn from(_: Rejected) -> Self {
            ParseError::Refused
        }
    }

    impl From<std::num::ParseIntError> for ParseError {
        fn from(_: std::num::ParseIntError) -> Self {
            ParseError::NotANumber
        }
    }

    #[breaker(error_threshold = 10)]
    async fn parse(text: &str) -> Result<u32, ParseError> {
        if text.is_empty() {
            return Err(ParseError::Empty);
        }
        let n: u32 = text.trim().parse()?;
        if n == 0 {
            return Ok(1);
        }
        Ok(n * 2)
    }

    #[tokio::test]
    async fn runs() {
        assert_eq!(parse("21").await, Ok(42));
        assert_eq!(parse("0").await, Ok(1));
        assert_eq!(parse("").await, Err(ParseError::Empty));
        assert_eq!(parse("x").await, Err(ParseError::NotANumber));
    }
}

mod send_future {
    use std::sync::Arc;

    use resiliency::{breaker, Rejected};

    fn assert_send<T: Send>(_: &T) {}

    struct Db {
        rows: Vec<u32>,
    }

    impl Db {
        #[breaker(key = table, timeout = "1s", error_threshold = 2)]
        async fn count(self: Arc<Self>, table: &str) -> Result<usize, Rejected> {
            tokio::task::yield_now().await;
            Ok(self.rows.len() + table.len())
        }
    }

    #[breaker(capacity = 0.75, timeout = "2s")]
    async fn charge(cents: u64) -> Result<u64, Rejected> {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        Ok(cents)
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn runs() {
        let future = charge(5);
        assert_send(&future);
        assert_eq!(tokio::spawn(future).await.unwrap().unwrap(), 5);

        let db = Arc::new(Db { rows: vec![1, 2] });
        let future = db.count("users");
        assert_send(&future);
        assert_eq!(future.await.unwrap(), 7);
    }
}

mod trait_impl_method {
    use resiliency::{breaker, Rejected};

    trait Store {
        async fn load(&self, id: u64) -> Result<String, Rejected>;
    }

    struct Memory {
        prefix: &'static str,
    }

    impl Store for Memory {
        #[breaker(error_threshold = 2)]
        async fn load(&self, id: u64) -> Result<String, Rejected> {
            Ok(format!("{}{id}", self.prefix))
        }
    }

    async fn load_via<S: Store>(store: &S, id: u64) -> Result<String, Rejected> {
        store.load(id).await
    }

    #[tokio::test]
    async fn runs() {
        let store = Memory { prefix: "row-" };
        assert_eq!(store.load(1).await.unwrap(), "row-1");
        assert_eq!(load_via(&store, 2).await.unwrap(), "row-2");
    }
}

mod visibility_docs_must_use {
    mod billing {
        use resiliency::{breaker, Rejected};

        /// Charges `cents`.
        ///
        /// The docs, `#[must_use]` and `pub(crate)` are kept by the expansion.
        #[must_use = "a charge that is not awaited does nothing"]
        #[breaker(error_threshold = 2, name = "billing")]
        pub(crate) async fn charge(cents: u64) -> Result<u64, Rejected> {
            Ok(cents)
        }
    }

    #[tokio::test]
    async fn runs() {
        assert_eq!(billing::charge(250).await.unwrap(), 250);
        assert!(resiliency::breaker::get("billing").is_some());
    }
}
