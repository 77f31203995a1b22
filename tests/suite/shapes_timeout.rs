//! Shapes `#[timeout]` must accept, each in a module of its own, compiled as this test and run on
//! a paused clock, each with an answer in time and one cut off: free fns and methods (`&self`,
//! `&mut self`, a generic impl), generic, borrowed, owned and `impl Trait` arguments, a borrowed
//! answer, error types, `name`, `total` as a const and an expression, `crate`, `Send` futures,
//! stacking with `#[tracing::instrument]` and `#[breaker]` either way. Errors are in
//! `tests/ui/timeout/fail`.

mod free_fn {
    use std::time::Duration;

    use resiliency::{timeout, Rejected};

    #[timeout("100ms")]
    async fn fetch(wait_ms: u64) -> Result<u64, Rejected> {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        Ok(wait_ms)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(60).await.unwrap(), 60);
        let started = tokio::time::Instant::now();
        let late = fetch(5_000).await.unwrap_err();
        assert!(late.is_timeout(), "{late}");
        assert_eq!(started.elapsed(), Duration::from_millis(100));
        assert!(late.name().ends_with("free_fn::fetch"), "{}", late.name());
    }
}

mod method_ref_self {
    use std::time::Duration;

    use resiliency::{timeout, Rejected};

    struct Client {
        base: String,
    }

    impl Client {
        #[timeout("100ms")]
        async fn get(&self, path: &str, wait_ms: u64) -> Result<String, Rejected> {
            tokio::time::sleep(Duration::from_millis(wait_ms)).await;
            Ok(format!("{}{path}", self.base))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        let client = Client {
            base: "http://127.0.0.1".into(),
        };
        assert_eq!(client.get("/a", 10).await.unwrap(), "http://127.0.0.1/a");
        assert!(client.get("/b", 500).await.unwrap_err().is_timeout());
    }
}

mod method_mut_self {
    use std::time::Duration;

    use resiliency::{timeout, Rejected};

    struct Counter {
        done: u32,
    }

    impl Counter {
        #[timeout("100ms")]
        async fn bump(&mut self, wait_ms: u64) -> Result<u32, Rejected> {
            tokio::time::sleep(Duration::from_millis(wait_ms)).await;
            self.done += 1;
            Ok(self.done)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        let mut counter = Counter { done: 0 };
        assert_eq!(counter.bump(10).await.unwrap(), 1);
        // Cut off before it counted: the body was dropped at its wait.
        assert!(counter.bump(500).await.unwrap_err().is_timeout());
        assert_eq!(counter.done, 1);
    }
}

mod generic_fn {
    use std::fmt::Display;
    use std::time::Duration;

    use resiliency::{timeout, Rejected};

    #[timeout("100ms")]
    async fn describe<T: Display>(item: T, wait_ms: u64) -> Result<String, Rejected> {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        Ok(format!("<{item}>"))
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(describe(7, 10).await.unwrap(), "<7>");
        assert_eq!(describe("x", 10).await.unwrap(), "<x>");
        assert!(describe('c', 500).await.unwrap_err().is_timeout());
    }
}

mod borrowed_and_owned_arguments {
    use std::time::Duration;

    use resiliency::{timeout, Rejected};

    // Neither `Clone` nor `Copy`: moved into the body, dropped with it when it is cut off.
    struct Payload {
        bytes: Vec<u8>,
    }

    #[timeout("100ms")]
    async fn store(
        key: &str,
        payload: Payload,
        log: &mut Vec<String>,
        wait_ms: u64,
    ) -> Result<usize, Rejected> {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        log.push(key.to_owned());
        Ok(payload.bytes.len())
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        let mut log = Vec::new();
        let payload = Payload {
            bytes: vec![1, 2, 3],
        };
        assert_eq!(store("a", payload, &mut log, 10).await.unwrap(), 3);
        let payload = Payload { bytes: vec![1] };
        assert!(store("b", payload, &mut log, 500)
            .await
            .unwrap_err()
            .is_timeout());
        assert_eq!(log, ["a"]);
    }
}

mod impl_trait_arguments {
    use std::time::Duration;

    use resiliency::{timeout, Rejected};

    #[timeout("100ms")]
    async fn sum(
        label: impl AsRef<str>,
        items: impl IntoIterator<Item = u64>,
        wait_ms: u64,
    ) -> Result<String, Rejected> {
        let total: u64 = items.into_iter().sum();
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        Ok(format!("{}={total}", label.as_ref()))
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(sum("n", vec![1, 2], 10).await.unwrap(), "n=3");
        assert_eq!(sum(String::from("m"), [4], 10).await.unwrap(), "m=4");
        assert!(sum("n", 0..3, 500).await.unwrap_err().is_timeout());
    }
}

mod borrowed_answer {
    use std::time::Duration;

    use resiliency::{timeout, Rejected};

    #[timeout("100ms")]
    async fn first_word(text: &str, wait_ms: u64) -> Result<&str, Rejected> {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        Ok(text.split(' ').next().unwrap_or(text))
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        let text = String::from("hello world");
        assert_eq!(first_word(&text, 10).await.unwrap(), "hello");
        assert!(first_word(&text, 500).await.unwrap_err().is_timeout());
    }
}

mod boxed_error {
    use std::error::Error;
    use std::time::Duration;

    use resiliency::{timeout, Rejected};

    #[timeout("100ms")]
    async fn fetch(wait_ms: u64) -> Result<u64, Box<dyn Error + Send + Sync>> {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        if wait_ms == 0 {
            return Err("upstream failed".into());
        }
        Ok(wait_ms)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(10).await.unwrap(), 10);
        assert_eq!(fetch(0).await.unwrap_err().to_string(), "upstream failed");
        let late = fetch(500).await.unwrap_err();
        assert!(
            late.downcast_ref::<Rejected>().unwrap().is_timeout(),
            "{late}"
        );
    }
}

mod anyhow_error {
    use std::time::Duration;

    use resiliency::{timeout, Rejected};

    #[timeout("100ms")]
    async fn fetch(wait_ms: u64) -> anyhow::Result<u64> {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        if wait_ms == 0 {
            anyhow::bail!("upstream failed");
        }
        Ok(wait_ms)
    }

    #[timeout("100ms")]
    async fn fetch_spelt_out(wait_ms: u64) -> Result<u64, anyhow::Error> {
        fetch(wait_ms).await
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(10).await.unwrap(), 10);
        assert_eq!(fetch(0).await.unwrap_err().to_string(), "upstream failed");
        let late = fetch(500).await.unwrap_err();
        assert!(
            late.downcast_ref::<Rejected>().unwrap().is_timeout(),
            "{late}"
        );
        assert_eq!(fetch_spelt_out(10).await.unwrap(), 10);
        let late = fetch_spelt_out(500).await.unwrap_err();
        assert!(
            late.downcast_ref::<Rejected>().unwrap().is_timeout(),
            "{late}"
        );
    }
}

mod user_enum {
    use std::time::Duration;

    use resiliency::{timeout, Rejected};

    #[derive(Debug)]
    enum PriceError {
        NotFound,
        Refused(Rejected),
    }

    impl From<Rejected> for PriceError {
        fn from(r: Rejected) -> Self {
            PriceError::Refused(r)
        }
    }

    #[timeout("100ms")]
    async fn price(sku: u64, wait_ms: u64) -> Result<u64, PriceError> {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        if sku == 0 {
            return Err(PriceError::NotFound);
        }
        Ok(sku * 100)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(price(7, 10).await.unwrap(), 700);
        assert!(matches!(price(0, 10).await, Err(PriceError::NotFound)));
        let late = price(7, 500).await;
        assert!(
            matches!(&late, Err(PriceError::Refused(r)) if r.is_timeout()),
            "{late:?}"
        );
    }
}

mod named {
    use std::time::Duration;

    use resiliency::{timeout, Rejected};

    #[timeout("100ms", name = "shapes_timeout.named")]
    async fn fetch(wait_ms: u64) -> Result<u64, Rejected> {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        Ok(wait_ms)
    }

    // The name first, then the duration, written with its own name.
    #[timeout(name = "shapes_timeout.named_total", total = "100ms")]
    async fn fetch_named_total(wait_ms: u64) -> Result<u64, Rejected> {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        Ok(wait_ms)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(10).await.unwrap(), 10);
        let late = fetch(500).await.unwrap_err();
        assert!(late.is_timeout(), "{late}");
        assert_eq!(late.name(), "shapes_timeout.named");
        assert!(resiliency::timeout::get("shapes_timeout.named").is_some());

        assert_eq!(fetch_named_total(10).await.unwrap(), 10);
        let late = fetch_named_total(500).await.unwrap_err();
        assert_eq!(late.name(), "shapes_timeout.named_total");
    }
}

mod total_const {
    use std::time::Duration;

    use resiliency::{timeout, Rejected};

    const LIMIT: Duration = Duration::from_millis(300);

    #[timeout(total = LIMIT)]
    async fn fetch(wait_ms: u64) -> Result<u64, Rejected> {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        Ok(wait_ms)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(250).await.unwrap(), 250);
        let started = tokio::time::Instant::now();
        assert!(fetch(5_000).await.unwrap_err().is_timeout());
        assert_eq!(started.elapsed(), LIMIT);
    }
}

mod total_expression {
    use std::time::Duration;

    use resiliency::{timeout, Rejected};

    #[timeout(total = Duration::from_millis(5 * 100))]
    async fn fetch(wait_ms: u64) -> Result<u64, Rejected> {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        Ok(wait_ms)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(450).await.unwrap(), 450);
        let started = tokio::time::Instant::now();
        assert!(fetch(5_000).await.unwrap_err().is_timeout());
        assert_eq!(started.elapsed(), Duration::from_millis(500));
    }
}

mod crate_path {
    use std::time::Duration;

    use resiliency::Rejected;

    #[resiliency::timeout("100ms", crate = "::resiliency")]
    async fn fetch(wait_ms: u64) -> Result<u64, Rejected> {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        Ok(wait_ms)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(10).await.unwrap(), 10);
        assert!(fetch(500).await.unwrap_err().is_timeout());
    }
}

mod instrument_above {
    use std::time::Duration;

    use resiliency::{timeout, Rejected};

    #[tracing::instrument(skip(secret))]
    #[timeout("100ms")]
    async fn login(user: &str, secret: String, wait_ms: u64) -> Result<usize, Rejected> {
        tracing::info!("checking");
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        Ok(user.len() + secret.len())
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(login("ann", "pw".into(), 10).await.unwrap(), 5);
        assert!(login("ann", "pw".into(), 500)
            .await
            .unwrap_err()
            .is_timeout());
    }
}

mod instrument_below {
    use std::time::Duration;

    use resiliency::{timeout, Rejected};

    #[timeout("100ms")]
    #[tracing::instrument(skip(secret))]
    async fn login(user: &str, secret: String, wait_ms: u64) -> Result<usize, Rejected> {
        tracing::info!("checking");
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        Ok(user.len() + secret.len())
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(login("ann", "pw".into(), 10).await.unwrap(), 5);
        assert!(login("ann", "pw".into(), 500)
            .await
            .unwrap_err()
            .is_timeout());
    }
}

mod breaker_above {
    use std::time::Duration;

    use resiliency::{breaker, timeout, Rejected};

    // Written `#[breaker]` first, so the breaker is the outer layer: a call the time limit cuts
    // off is an error it counts (here it opens the breaker).
    #[breaker(error_threshold = 1, error_timeout = "30s")]
    #[timeout("100ms")]
    async fn fetch(wait_ms: u64) -> Result<u64, Rejected> {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        Ok(wait_ms)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(10).await.unwrap(), 10);
        assert!(fetch(500).await.unwrap_err().is_timeout());
        let refused = fetch(10).await.unwrap_err();
        assert!(refused.is_circuit_open(), "{refused}");
    }
}

mod breaker_below {
    use std::time::Duration;

    use resiliency::{breaker, timeout, Rejected};

    // Written `#[timeout]` first, so the time limit is the outer layer: a call it cuts off is
    // dropped inside the breaker, which counts it neither way and stays closed.
    #[timeout("100ms")]
    #[breaker(error_threshold = 1, error_timeout = "30s")]
    async fn fetch(wait_ms: u64) -> Result<u64, Rejected> {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        Ok(wait_ms)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(10).await.unwrap(), 10);
        assert!(fetch(500).await.unwrap_err().is_timeout());
        // error_threshold = 1 would have opened the breaker had it counted the call cut off.
        let after = fetch(10).await;
        assert_eq!(after.as_ref().ok(), Some(&10), "{after:?}");
    }
}

mod generic_struct_impl {
    use std::fmt::Display;
    use std::time::Duration;

    use resiliency::{timeout, Rejected};

    struct Cache<T> {
        items: Vec<T>,
    }

    impl<T: Display + Send + Sync> Cache<T> {
        #[timeout("100ms")]
        async fn render(&self, wait_ms: u64) -> Result<String, Rejected> {
            tokio::time::sleep(Duration::from_millis(wait_ms)).await;
            let items: Vec<String> = self.items.iter().map(ToString::to_string).collect();
            Ok(items.join(","))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        let numbers = Cache { items: vec![1, 2] };
        let words = Cache { items: vec!["a"] };
        assert_eq!(numbers.render(10).await.unwrap(), "1,2");
        assert_eq!(words.render(10).await.unwrap(), "a");
        assert!(numbers.render(500).await.unwrap_err().is_timeout());
        assert!(words.render(500).await.unwrap_err().is_timeout());
    }
}

mod send_future {
    use std::fmt::Display;
    use std::sync::Arc;
    use std::time::Duration;

    use resiliency::{timeout, Rejected};

    fn assert_send<T: Send>(_: &T) {}

    struct Db {
        rows: Vec<u32>,
    }

    impl Db {
        #[timeout("100ms")]
        async fn count(self: Arc<Self>, table: String, wait_ms: u64) -> Result<usize, Rejected> {
            tokio::time::sleep(Duration::from_millis(wait_ms)).await;
            Ok(self.rows.len() + table.len())
        }
    }

    #[timeout("100ms")]
    async fn describe<T: Display + Send>(item: T, wait_ms: u64) -> Result<String, Rejected> {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        Ok(item.to_string())
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        let db = Arc::new(Db { rows: vec![1, 2] });
        let future = Arc::clone(&db).count("users".into(), 10);
        assert_send(&future);
        assert_eq!(tokio::spawn(future).await.unwrap().unwrap(), 7);
        let future = Arc::clone(&db).count("users".into(), 500);
        assert!(tokio::spawn(future)
            .await
            .unwrap()
            .unwrap_err()
            .is_timeout());

        let future = describe(5, 10);
        assert_send(&future);
        assert_eq!(tokio::spawn(future).await.unwrap().unwrap(), "5");
        assert!(tokio::spawn(describe(5, 500))
            .await
            .unwrap()
            .unwrap_err()
            .is_timeout());
    }
}
