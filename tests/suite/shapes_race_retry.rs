//! Shapes `#[race_retry]` must accept, each in a module of its own, compiled as this test and run:
//! every argument, error types, owned, borrowed and `mut` arguments and `self`s copied per attempt,
//! trait impls, `Send` futures, stacking with `#[breaker]` either way. Errors are in
//! `tests/ui/race_retry/fail`; the `crate = "..."` re-export case is `tests/ui/race_retry/pass`.

mod after_percentile {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use resiliency::{race_retry, Rejected};

    static ATTEMPTS: AtomicU32 = AtomicU32::new(0);

    // Until it has seen enough attempts, a percentile `after` waits `total / (retries + 1)`.
    #[race_retry(retries = 2, after = "p99.9", total = "600ms")]
    async fn fetch() -> Result<u32, Rejected> {
        let slow = ATTEMPTS.fetch_add(1, Ordering::Relaxed) == 0;
        tokio::time::sleep(Duration::from_millis(if slow { 5_000 } else { 10 })).await;
        Ok(1)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        let started = tokio::time::Instant::now();
        assert_eq!(fetch().await.unwrap(), 1);
        assert_eq!(started.elapsed(), Duration::from_millis(210));
        assert_eq!(ATTEMPTS.load(Ordering::Relaxed), 2);
    }
}

mod all_arguments {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use resiliency::{race_retry, Rejected};

    #[derive(Debug)]
    enum FetchError {
        NotFound,
        Refused(Rejected),
    }

    impl From<Rejected> for FetchError {
        fn from(r: Rejected) -> Self {
            FetchError::Refused(r)
        }
    }

    fn is_transient(e: &FetchError) -> bool {
        !matches!(e, FetchError::NotFound)
    }

    static ATTEMPTS: AtomicU32 = AtomicU32::new(0);

    #[race_retry(
        retries = 2,
        after = "150ms",
        total = "450ms",
        each = "300ms",
        budget = 0.1,
        backoff = "20ms",
        backoff_factor = 3,
        backoff_max = "100ms",
        retry_if = is_transient,
        crate = "::resiliency",
    )]
    async fn fetch(id: u64, hang: bool) -> Result<u64, FetchError> {
        // The very first attempt hangs (or every one, with `hang`); the others answer in 20 ms.
        let first = ATTEMPTS.fetch_add(1, Ordering::Relaxed) == 0;
        tokio::time::sleep(Duration::from_millis(if first || hang {
            5_000
        } else {
            20
        }))
        .await;
        if id == 0 {
            return Err(FetchError::NotFound);
        }
        Ok(id)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        // The second attempt starts after 150 ms and wins at 170 ms.
        let started = tokio::time::Instant::now();
        assert_eq!(fetch(7, false).await.unwrap(), 7);
        assert_eq!(started.elapsed(), Duration::from_millis(170));

        // A miss is not worth another attempt.
        assert!(matches!(fetch(0, false).await, Err(FetchError::NotFound)));

        // Attempts start at 0, 150 and 300 ms (when the first one passes `each`); none answers by
        // the deadline.
        let started = tokio::time::Instant::now();
        let late = fetch(7, true).await;
        assert!(
            matches!(&late, Err(FetchError::Refused(r)) if r.is_deadline()),
            "{late:?}"
        );
        assert_eq!(started.elapsed(), Duration::from_millis(450));
    }
}

mod anyhow_result {
    use std::time::Duration;

    use resiliency::{race_retry, Rejected};

    #[race_retry(retries = 2, after = "100ms", total = "450ms")]
    async fn fetch(wait_ms: u64) -> anyhow::Result<u64> {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        if wait_ms == 0 {
            anyhow::bail!("upstream failed");
        }
        Ok(wait_ms)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(10).await.unwrap(), 10);
        // Every attempt failed: the last error.
        assert_eq!(fetch(0).await.unwrap_err().to_string(), "upstream failed");
        // Past the deadline: a `Rejected` inside the `anyhow::Error`.
        let late = fetch(1_000).await.unwrap_err();
        assert!(
            late.downcast_ref::<Rejected>().unwrap().is_deadline(),
            "{late}"
        );
    }
}

mod arc_argument {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use resiliency::{race_retry, Rejected};

    // Not `Clone`: shared with every attempt through the `Arc`.
    struct Pool {
        calls: AtomicU32,
    }

    #[race_retry(retries = 2, after = "100ms", total = "1s")]
    async fn query(pool: Arc<Pool>, sql: &str) -> Result<usize, Rejected> {
        let first = pool.calls.fetch_add(1, Ordering::Relaxed) == 0;
        tokio::time::sleep(Duration::from_millis(if first { 900 } else { 10 })).await;
        Ok(sql.len())
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        let pool = Arc::new(Pool {
            calls: AtomicU32::new(0),
        });
        assert_eq!(query(Arc::clone(&pool), "select 1").await.unwrap(), 8);
        assert_eq!(pool.calls.load(Ordering::Relaxed), 2);
        // Every attempt's clone has been dropped with the call.
        assert_eq!(Arc::strong_count(&pool), 1);
    }
}

mod boxed_error {
    use std::error::Error;
    use std::time::Duration;

    use resiliency::{race_retry, Rejected};

    #[race_retry(retries = 2, after = "100ms", total = "450ms")]
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
        let late = fetch(1_000).await.unwrap_err();
        assert!(
            late.downcast_ref::<Rejected>().unwrap().is_deadline(),
            "{late}"
        );
    }
}

mod breaker_above {
    use std::sync::atomic::{AtomicU32, Ordering};

    use resiliency::{breaker, race_retry, Rejected};

    #[derive(Debug)]
    enum FetchError {
        Down,
        Refused(Rejected),
    }

    impl From<Rejected> for FetchError {
        fn from(r: Rejected) -> Self {
            FetchError::Refused(r)
        }
    }

    static ATTEMPTS: AtomicU32 = AtomicU32::new(0);

    // Written `#[breaker]` first, so the breaker is the outer layer: it sees one outcome per call (the
    // race's), and once open it refuses a call before any attempt.
    #[breaker(error_threshold = 1, error_timeout = "30s")]
    #[race_retry(retries = 2, after = "100ms", total = "1s")]
    async fn fetch(ok: bool) -> Result<u32, FetchError> {
        ATTEMPTS.fetch_add(1, Ordering::Relaxed);
        if ok {
            Ok(1)
        } else {
            Err(FetchError::Down)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(true).await.unwrap(), 1);
        assert_eq!(ATTEMPTS.load(Ordering::Relaxed), 1);
        // Three attempts fail; the breaker counts the call's one error and opens.
        assert!(matches!(fetch(false).await, Err(FetchError::Down)));
        assert_eq!(ATTEMPTS.load(Ordering::Relaxed), 4);
        // The open breaker refuses the next call before any attempt.
        let refused = fetch(true).await;
        assert!(
            matches!(&refused, Err(FetchError::Refused(r)) if r.is_circuit_open()),
            "{refused:?}"
        );
        assert_eq!(ATTEMPTS.load(Ordering::Relaxed), 4);
    }
}

mod breaker_below {
    use std::sync::atomic::{AtomicU32, Ordering};

    use resiliency::{breaker, race_retry, Rejected};

    #[derive(Debug)]
    enum FetchError {
        Down,
        Refused(Rejected),
    }

    impl From<Rejected> for FetchError {
        fn from(r: Rejected) -> Self {
            FetchError::Refused(r)
        }
    }

    static ATTEMPTS: AtomicU32 = AtomicU32::new(0);

    // Written `#[race_retry]` first, so the breaker is the inner layer, around each attempt: the first
    // attempt's error opens it, and the retries are refused by it at once.
    #[race_retry(retries = 2, after = "100ms", total = "1s")]
    #[breaker(error_threshold = 1, error_timeout = "30s")]
    async fn fetch(ok: bool) -> Result<u32, FetchError> {
        ATTEMPTS.fetch_add(1, Ordering::Relaxed);
        if ok {
            Ok(1)
        } else {
            Err(FetchError::Down)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(true).await.unwrap(), 1);
        assert_eq!(ATTEMPTS.load(Ordering::Relaxed), 1);
        // The first attempt fails and opens the breaker; the two retries never reach the body.
        let refused = fetch(false).await;
        assert!(
            matches!(&refused, Err(FetchError::Refused(r)) if r.is_circuit_open()),
            "{refused:?}"
        );
        assert_eq!(ATTEMPTS.load(Ordering::Relaxed), 2);
    }
}

// `budget = "off"` and `backoff = "off"`: every extra attempt is made, and a failed attempt's
// replacement starts at once.
mod budget_and_backoff_off {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use resiliency::{race_retry, Rejected};

    #[derive(Debug)]
    enum FetchError {
        Down,
        #[allow(dead_code)]
        Refused(Rejected),
    }

    impl From<Rejected> for FetchError {
        fn from(r: Rejected) -> Self {
            FetchError::Refused(r)
        }
    }

    static ATTEMPTS: AtomicU32 = AtomicU32::new(0);

    #[race_retry(
        retries = 2,
        after = "150ms",
        total = "450ms",
        budget = "off",
        backoff = "off"
    )]
    async fn fetch() -> Result<u32, FetchError> {
        tokio::time::sleep(Duration::from_millis(10)).await;
        ATTEMPTS.fetch_add(1, Ordering::Relaxed);
        Err(FetchError::Down)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        // 30 calls, every attempt failing after 10 ms: 3 attempts each, 10 ms apart, none refused.
        for _ in 0..30 {
            let started = tokio::time::Instant::now();
            assert!(matches!(fetch().await, Err(FetchError::Down)));
            assert_eq!(started.elapsed(), Duration::from_millis(30));
        }
        assert_eq!(ATTEMPTS.load(Ordering::Relaxed), 90);
    }
}

mod generic_where {
    use std::fmt::Display;

    use resiliency::{race_retry, Rejected};

    #[race_retry(retries = 1, after = "100ms", total = "1s")]
    async fn describe<T, U>(label: T, items: Vec<U>) -> Result<String, Rejected>
    where
        T: Display + Clone + Send,
        U: Display + Clone + Send,
    {
        let items: Vec<String> = items.iter().map(ToString::to_string).collect();
        Ok(format!("{label}: {}", items.join(", ")))
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(describe("ids", vec![1, 2]).await.unwrap(), "ids: 1, 2");
        assert_eq!(describe('c', vec!["x"]).await.unwrap(), "c: x");
    }
}

mod impl_trait_args {
    use resiliency::{race_retry, Rejected};

    // An `impl Trait` argument is cloned for each attempt like any owned one.
    #[race_retry(retries = 1, after = "100ms", total = "1s")]
    async fn greet(name: impl AsRef<str> + Clone, greeting: &str) -> Result<String, Rejected> {
        Ok(format!("{greeting} {}", name.as_ref()))
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(greet("ann", "hi").await.unwrap(), "hi ann");
        assert_eq!(
            greet(String::from("bob"), "hello").await.unwrap(),
            "hello bob"
        );
    }
}

mod method_self {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use resiliency::{race_retry, Rejected};

    struct Directory {
        region: String,
        attempts: AtomicU32,
    }

    impl Directory {
        // Every attempt borrows the same `&self`.
        #[race_retry(retries = 2, after = "150ms", total = "450ms")]
        async fn lookup(&self, id: u64) -> Result<String, Rejected> {
            // The first attempt hangs; the second answers in 20 ms.
            let slow = self.attempts.fetch_add(1, Ordering::Relaxed) == 0;
            tokio::time::sleep(Duration::from_millis(if slow { 5_000 } else { 20 })).await;
            Ok(format!("user {id} in {}", self.region))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        let directory = Directory {
            region: "eu".into(),
            attempts: AtomicU32::new(0),
        };
        let started = tokio::time::Instant::now();
        assert_eq!(directory.lookup(7).await.unwrap(), "user 7 in eu");
        assert_eq!(started.elapsed(), Duration::from_millis(170));
        assert_eq!(directory.attempts.load(Ordering::Relaxed), 2);
    }
}

mod mut_binding {
    use std::error::Error;
    use std::sync::atomic::{AtomicU32, Ordering};

    use resiliency::race_retry;

    static ATTEMPTS: AtomicU32 = AtomicU32::new(0);

    // Each attempt gets its own copy of a `mut` argument and may change it: the first attempt fails
    // after changing its copy, and the retry still starts from the caller's value.
    #[race_retry(retries = 2, after = "100ms", total = "1s")]
    async fn build(
        mut path: String,
        mut depth: u32,
    ) -> Result<String, Box<dyn Error + Send + Sync>> {
        depth += 1;
        path.push_str("/leaf");
        if ATTEMPTS.fetch_add(1, Ordering::Relaxed) == 0 {
            return Err(format!("{path} is busy").into());
        }
        Ok(format!("{path}:{depth}"))
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(build("/root".into(), 1).await.unwrap(), "/root/leaf:2");
        assert_eq!(ATTEMPTS.load(Ordering::Relaxed), 2);
    }
}

// An owned `self` (`self`, `mut self`, `self: Arc<Self>`, `self: Box<Self>`) is cloned for each
// attempt, as owned arguments are; `self: &Self` is shared like `&self`. `self::` paths and the
// `self` of an `impl` nested in the body are left alone; `{self}` in a format string is the copy.
// No warnings.
mod owned_self {
    #![deny(warnings)]

    use std::sync::Arc;
    use std::time::Duration;

    use resiliency::{race_retry, Rejected};

    #[derive(Clone, Debug)]
    struct Client {
        name: String,
    }

    fn suffix() -> &'static str {
        "!"
    }

    impl Client {
        #[race_retry(retries = 2, after = "10ms", total = "1s")]
        async fn by_value(self, id: u64) -> Result<String, Rejected> {
            Ok(format!("{}{id}", self.name))
        }

        #[race_retry(retries = 2, after = "10ms", total = "1s")]
        async fn by_mut_value(mut self, id: u64) -> Result<String, Rejected> {
            use self::suffix as end;
            struct Tag;
            impl Tag {
                fn text(&self) -> &'static str {
                    "tag"
                }
            }
            self.name.push_str(end());
            Ok(format!("{}{id}-{}", self.name, Tag.text()))
        }

        // A format string that captures `self`, next to an escaped `{{self}}` that is text.
        #[race_retry(retries = 2, after = "10ms", total = "1s")]
        async fn shown(self) -> Result<String, Rejected> {
            Ok(format!("{self:?} {{self}}"))
        }

        #[race_retry(retries = 2, after = "10ms", total = "1s")]
        async fn by_arc(self: Arc<Self>) -> Result<usize, Rejected> {
            tokio::time::sleep(Duration::from_millis(1)).await;
            Ok(Arc::strong_count(&self))
        }

        #[race_retry(retries = 2, after = "10ms", total = "1s")]
        async fn by_box(self: Box<Self>) -> Result<String, Rejected> {
            Ok(self.name)
        }

        // `self: &Self` is the shape under test, so clippy's advice to write `&self` does not apply.
        #[allow(clippy::needless_arbitrary_self_type)]
        #[race_retry(retries = 2, after = "10ms", total = "1s")]
        async fn by_typed_ref(self: &Self) -> Result<&str, Rejected> {
            Ok(&self.name)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        let client = Client { name: "c".into() };
        assert_eq!(client.clone().by_value(1).await.unwrap(), "c1");
        assert_eq!(client.clone().by_mut_value(2).await.unwrap(), "c!2-tag");
        assert_eq!(client.name, "c");
        assert_eq!(
            client.clone().shown().await.unwrap(),
            "Client { name: \"c\" } {self}"
        );
        let shared = Arc::new(client.clone());
        // The caller's `Arc`, the one moved into the call, and the attempt's copy.
        assert_eq!(shared.clone().by_arc().await.unwrap(), 3);
        assert_eq!(Arc::strong_count(&shared), 1);
        assert_eq!(Box::new(client.clone()).by_box().await.unwrap(), "c");
        assert_eq!(client.by_typed_ref().await.unwrap(), "c");
    }
}

mod retry_if {
    use std::sync::atomic::{AtomicU32, Ordering};

    use resiliency::{race_retry, Rejected};

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
        match e {
            FetchError::NotFound => false,
            FetchError::Unavailable => true,
            FetchError::Refused(r) => r.is_too_busy(),
        }
    }

    static BY_PATH: AtomicU32 = AtomicU32::new(0);
    static BY_CLOSURE: AtomicU32 = AtomicU32::new(0);
    static BY_UNTYPED_CLOSURE: AtomicU32 = AtomicU32::new(0);

    #[race_retry(retries = 2, after = "100ms", total = "1s", retry_if = is_transient)]
    async fn by_path(not_found: bool) -> Result<u32, FetchError> {
        BY_PATH.fetch_add(1, Ordering::Relaxed);
        Err(if not_found {
            FetchError::NotFound
        } else {
            FetchError::Unavailable
        })
    }

    #[race_retry(retries = 2, after = "100ms", total = "1s", retry_if = |e: &FetchError| !matches!(e, FetchError::NotFound))]
    async fn by_closure(not_found: bool) -> Result<u32, FetchError> {
        BY_CLOSURE.fetch_add(1, Ordering::Relaxed);
        Err(if not_found {
            FetchError::NotFound
        } else {
            FetchError::Unavailable
        })
    }

    // The closure's parameter type is learned from the fn's error type.
    #[race_retry(retries = 2, after = "100ms", total = "1s", retry_if = |e| !matches!(e, FetchError::NotFound))]
    async fn by_untyped_closure(not_found: bool) -> Result<u32, FetchError> {
        BY_UNTYPED_CLOSURE.fetch_add(1, Ordering::Relaxed);
        Err(if not_found {
            FetchError::NotFound
        } else {
            FetchError::Unavailable
        })
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        // A miss is not worth another attempt: one attempt.
        assert!(matches!(by_path(true).await, Err(FetchError::NotFound)));
        assert_eq!(BY_PATH.load(Ordering::Relaxed), 1);
        // An outage is: three attempts, and the last error.
        assert!(matches!(by_path(false).await, Err(FetchError::Unavailable)));
        assert_eq!(BY_PATH.load(Ordering::Relaxed), 4);

        assert!(matches!(by_closure(true).await, Err(FetchError::NotFound)));
        assert_eq!(BY_CLOSURE.load(Ordering::Relaxed), 1);
        assert!(matches!(
            by_closure(false).await,
            Err(FetchError::Unavailable)
        ));
        assert_eq!(BY_CLOSURE.load(Ordering::Relaxed), 4);

        assert!(matches!(
            by_untyped_closure(true).await,
            Err(FetchError::NotFound)
        ));
        assert_eq!(BY_UNTYPED_CLOSURE.load(Ordering::Relaxed), 1);
        assert!(matches!(
            by_untyped_closure(false).await,
            Err(FetchError::Unavailable)
        ));
        assert_eq!(BY_UNTYPED_CLOSURE.load(Ordering::Relaxed), 4);
    }
}

mod send_future {
    use std::sync::Arc;
    use std::time::Duration;

    use resiliency::{race_retry, Rejected};

    fn send<T: Send>(_: T) {}

    struct Db {
        rows: Vec<u32>,
    }

    impl Db {
        #[race_retry(retries = 2, after = "50ms", total = "1s", each = "500ms")]
        async fn count(&self, table: &str, filter: String) -> Result<usize, Rejected> {
            tokio::time::sleep(Duration::from_millis(1)).await;
            Ok(self.rows.len() + table.len() + filter.len())
        }
    }

    #[race_retry(retries = 1, after = "p95", total = "1s", budget = 0.5)]
    async fn charge(cents: u64, note: Arc<str>) -> Result<u64, Rejected> {
        tokio::task::yield_now().await;
        Ok(cents + note.len() as u64)
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn runs() {
        send(charge(5, "ab".into()));
        assert_eq!(
            tokio::spawn(charge(5, "ab".into())).await.unwrap().unwrap(),
            7
        );

        let db = Db { rows: vec![1, 2] };
        send(db.count("users", "x".into()));
        let db = Arc::new(db);
        let spawned = tokio::spawn(async move { db.count("users", "x".into()).await });
        assert_eq!(spawned.await.unwrap().unwrap(), 8);
    }
}

mod trait_impl_method {
    use std::future::Future;

    use resiliency::{race_retry, Rejected};

    trait Store {
        async fn load(&self, id: u64) -> Result<String, Rejected>;
    }

    // A trait that asks for a `Send` future, as `tokio::spawn`ing callers do.
    trait SendStore {
        fn count(&self, table: &str) -> impl Future<Output = Result<usize, Rejected>> + Send;
    }

    struct Memory {
        prefix: &'static str,
    }

    impl Store for Memory {
        #[race_retry(retries = 1, after = "100ms", total = "1s")]
        async fn load(&self, id: u64) -> Result<String, Rejected> {
            Ok(format!("{}{id}", self.prefix))
        }
    }

    impl SendStore for Memory {
        #[race_retry(retries = 1, after = "100ms", total = "1s")]
        async fn count(&self, table: &str) -> Result<usize, Rejected> {
            Ok(self.prefix.len() + table.len())
        }
    }

    async fn load_via<S: Store>(store: &S, id: u64) -> Result<String, Rejected> {
        store.load(id).await
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        let store = Memory { prefix: "row-" };
        assert_eq!(store.load(1).await.unwrap(), "row-1");
        assert_eq!(load_via(&store, 2).await.unwrap(), "row-2");
        assert_eq!(store.count("users").await.unwrap(), 9);
    }
}

mod tuple_pattern {
    use resiliency::{race_retry, Rejected};

    struct Point {
        x: i64,
        y: i64,
    }

    // Each binding of a pattern argument is copied for each attempt.
    #[race_retry(retries = 1, after = "100ms", total = "1s")]
    async fn locate(
        (id, region): (u64, &str),
        &Point { x, y }: &Point,
    ) -> Result<String, Rejected> {
        Ok(format!("{id}@{region} ({x}, {y})"))
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        let here = Point { x: 1, y: -2 };
        assert_eq!(locate((7, "eu"), &here).await.unwrap(), "7@eu (1, -2)");
    }
}
