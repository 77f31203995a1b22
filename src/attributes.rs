//! The attributes, re-exported with their documentation (tested here, against the facade).

/// Writes an attribute's docs: `before`, then one row of the arguments table per setting of the
/// policy's table in `resiliency_rules` (its example, the first line of its docs, its default),
/// then `after`, on `item`.
macro_rules! documented {
    (
        before { $(#[doc = $before:literal])* }
        after { $(#[doc = $after:literal])* }
        item { $item:item }
        $(
            #[doc = $first:literal]
            $(#[doc = $rest:literal])*
            $setting:ident: $ty:ty as $kind:ident, e.g. $example:literal, default $how:tt $default:expr;
        )*
    ) => {
        $(#[doc = $before])*
        $(
            #[doc = concat!(
                "| `", stringify!($setting), " = ", stringify!($example), "` |", $first, " | ",
                resiliency_runtime::__private::default_words!($how $default), " |"
            )]
        )*
        $(#[doc = $after])*
        $item
    };
}
use documented;

resiliency_runtime::__private::breaker_settings!(crate::attributes::documented! {
    before {
        /// A circuit breaker around an `async fn` or a blocking fn, with Semian's semantics.
        ///
        /// ```
        /// use resiliency::{breaker, Rejected};
        ///
        /// type BoxError = Box<dyn std::error::Error + Send + Sync>;
        ///
        /// #[breaker(error_threshold = 2, error_timeout = "30s")]
        /// async fn fetch(ok: bool) -> Result<&'static str, BoxError> {
        ///     if ok { Ok("data") } else { Err("upstream failed".into()) }
        /// }
        ///
        /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
        /// # async fn main() {
        /// assert!(fetch(false).await.is_err());
        /// assert!(fetch(false).await.is_err()); // the second error within 30 s opens it
        /// let refused = fetch(true).await.unwrap_err();
        /// assert!(refused.downcast_ref::<Rejected>().unwrap().is_circuit_open());
        ///
        /// tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        /// assert_eq!(fetch(true).await.unwrap(), "data"); // the probe succeeds and closes it
        /// # }
        /// ```
        ///
        /// # Arguments
        ///
        /// | argument | meaning | default |
        /// |---|---|---|
        /// | `name = "payments"` | calls with one name share one breaker (with a breaker registered from code or by a `BreakerLayer` by that name; a difference of options is logged) | the fn's path, e.g. `my_app::Client::get` |
        /// | `key = host` | an expression over the arguments (a string, number, address or `format_args!(..)`: see `BreakerKey`): one breaker per value | none |
    }
    after {
        /// | `count_if = is_transient` | `fn(&E) -> bool`: only errors it accepts count | every error |
        /// | `fallback = path` | a fn or method (`Self::cached`) called instead when the call is refused: with the fn's arguments (`self` first, owned ones cloned before the call) and the `Rejected`; sync or `async`; see [Fallbacks](macro@crate::breaker#fallbacks) | none: the refusal is the caller's `Err` |
        /// | `fallback_on = "errors"` | the fallback covers every `Err`, refusals included, and gets the fn's error type | `"refusals"` |
        /// | `crate = "::resiliency"` | the path to this crate, when re-exported | `::resiliency` |
        ///
        /// Durations, here and in the other attributes, are strings: a number and a unit (`ns`, `us` or
        /// `µs`, `ms`, `s`, `m`, `h`), such as `"450ms"`, `"1.5s"` or `"250us"`, or several such parts
        /// from the largest unit to the smallest, each once, such as `"1m30s"` or `"2m 30s"` (only the
        /// last part may have a fraction: `"1m30.5s"`).
        ///
        /// **Settings from code.** A number or a duration, here and in the other attributes, may also be
        /// a `const`, a `static`, a path or any other expression (a call, `2 * BASE`, a block) of the type
        /// the builder method of the argument's name takes: `u32` for counts, `f64` for `capacity`,
        /// `failure_rate` and `backoff`, `usize` for `max_keys`, `std::time::Duration` for durations.
        ///
        /// ```
        /// use std::time::Duration;
        /// use resiliency::{breaker, Rejected};
        ///
        /// const THRESHOLD: u32 = 5;
        ///
        /// #[breaker(error_threshold = THRESHOLD, timeout = Duration::from_secs(2))]
        /// async fn charge(cents: u64) -> Result<u64, Rejected> {
        ///     Ok(cents)
        /// }
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// # assert_eq!(charge(250).await.unwrap(), 250);
        /// # }
        /// ```
        ///
        /// Such an expression is passed as written to the [`BreakerBuilder`](crate::BreakerBuilder)
        /// method (`.error_threshold(THRESHOLD)`) and evaluated once, at the first call: it may name
        /// consts, statics and functions, but not the fn's arguments (a compile error says so) nor `Self`
        /// (name the type). A literal is checked at compile time; an expression's value is checked at
        /// the first call, by the same rules with the same message, and a value they refuse is reported
        /// as an error-level `tracing` event while the calls go on (each setting refused falls back to
        /// its default). The rules about which arguments go together still hold at compile time:
        /// `capacity = CAP` needs `timeout`, whatever `CAP` is.
        ///
        /// **Settings at run time.** The arguments are the defaults of the breaker's named site: the
        /// [`settings`](mod@crate::settings) module overrides each of them by the same name, for this
        /// breaker or for every one, from code, a configuration file or the environment
        /// (`RESILIENCY_BREAKER__<NAME>__<SETTING>`), without a rebuild; a change reaches the live
        /// breaker and keeps its state.
        ///
        /// Stacked attributes of this crate apply top to bottom: the first written is the outermost, so
        /// `#[too_busy]` above `#[breaker]` sheds load before the breaker counts anything.
        ///
        /// The function is an `async fn` or a blocking fn (free or a method; generics, `&self` and
        /// `impl Trait` arguments are fine) returning `Result<T, E>` with `E: From<resiliency::Rejected>`.
        /// While the breaker is open the body does not run and the call returns `Err(E::from(Rejected))`.
        ///
        /// The expansion is short; `cargo expand` shows something like:
        ///
        /// ```ignore
        /// async fn fetch(ok: bool) -> Result<&'static str, BoxError> {
        ///     {
        ///         fn breaker_site() {}
        ///         static BREAKER: ::resiliency::__private::BreakerSite = ::resiliency::__private::BreakerSite::new(
        ///             || ::resiliency::__private::name_of(breaker_site),
        ///             |breaker| breaker.error_threshold(2).error_timeout(::core::time::Duration::from_secs(30)),
        ///         );
        ///         BREAKER.breaker()
        ///     }
        ///         .call(async move { if ok { Ok("data") } else { Err("upstream failed".into()) } })
        ///         .await
        /// }
        /// ```
        ///
        /// `breaker_site` only marks where the fn is: its path (`my_app::fetch`, or
        /// `my_app::Client::fetch` in an `impl`) is the breaker's default name. The call is
        /// [`Breaker::call`](crate::Breaker::call)'s: admitted at its first poll, with the rule and the
        /// timeout in force then.
        ///
        /// # Fallbacks
        ///
        /// `fallback = path` names what the call returns instead when the policy refuses it: a fn, or a
        /// method as `Self::name`, called with the fn's arguments (`self` first) and, last, the reason.
        /// It may be sync or `async`, and returns what the fn returns. Every attribute takes it. The
        /// compiler checks the fallback where it is named: not found, the wrong number of arguments,
        /// the wrong reason or return type are errors at `path`.
        ///
        /// ```
        /// use resiliency::{breaker, Rejected};
        ///
        /// #[derive(Debug, PartialEq)]
        /// enum ApiError { Down }
        ///
        /// struct Profiles;
        ///
        /// impl Profiles {
        ///     /// The fallback: the same arguments, then the refusal.
        ///     async fn from_cache(&self, id: u64, why: Rejected) -> Result<String, ApiError> {
        ///         assert!(why.is_circuit_open());
        ///         Ok(format!("cached profile {id}"))
        ///     }
        ///
        ///     #[breaker(error_threshold = 1, error_timeout = "30s", fallback = Self::from_cache)]
        ///     async fn profile(&self, id: u64) -> Result<String, ApiError> {
        ///         Err(ApiError::Down) // the upstream is down
        ///     }
        /// }
        ///
        /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
        /// # async fn main() {
        /// let profiles = Profiles;
        /// // The body's error is the caller's: the fallback covers refusals.
        /// assert_eq!(profiles.profile(7).await.unwrap_err(), ApiError::Down);
        /// // The breaker is open now: the fallback answers.
        /// assert_eq!(profiles.profile(7).await.unwrap(), "cached profile 7");
        /// # }
        /// ```
        ///
        /// * **What it covers.** By default, the policy's refusals (an open breaker, its `timeout`, a
        ///   shed call, a race's deadline): the reason is the `Rejected`, the body's own errors go to
        ///   the caller as they are, and the fn's error type needs no `From<Rejected>`. With
        ///   `fallback_on = "errors"`, every `Err` (refusals included, converted by `From<Rejected>`)
        ///   goes to the fallback, whose reason is then the fn's error type.
        /// * **Arguments.** The fallback gets each argument as the caller gave it, so each is copied
        ///   before the call takes it: references and `&self` copied, owned values cloned (an owned
        ///   argument must be `Clone`; take `&T` or an `Arc` where a clone costs). A pattern argument
        ///   (`Json(order): Json<Order>`) is given whole. A `&mut` argument stays lent to the call,
        ///   so it is a compile error with `fallback`.
        /// * **Counted as a fallback.** The guarded call counts as what it was (a refusal, an error),
        ///   never as a success; the fallback is a `tracing` event of its own (debug, target
        ///   `resiliency::fallback`, message "the call fell back", with `policy`: `breaker`,
        ///   `too_busy` or `race_retry`; `name`: the site's; and `cause`) and, with the `metrics`
        ///   feature, `resiliency_fallbacks_total` with the same labels. `cause` takes two values:
        ///   `refused` under the default `fallback_on = "refusals"` (the policy refused the call),
        ///   and `error` under `fallback_on = "errors"`, for every `Err` it covers, a refusal
        ///   included (converted to the fn's error type, it is one error among others).
        /// * **Stacked attributes.** A fallback belongs to the attribute it is written on, which is
        ///   what lets it get that policy's `Rejected` (a separate `#[fallback]` over a stack would
        ///   only see the fn's error type). To cover a whole stack, put it on the outermost attribute
        ///   with `fallback_on = "errors"`: the inner attributes' refusals reach it as the fn's error.
        /// * **Guarantees.** A fallback that panics, or a call dropped while its fallback runs,
        ///   leaves the policy as the guarded call left it: the call had ended before the fallback
        ///   started. Return types must be nameable: `impl Trait` in the
        ///   return type is a compile error with `fallback`.
        ///
        /// # Retry-After, and the time left
        ///
        /// An error that knows how long its upstream asked callers to wait implements
        /// [`RetryHint`](crate::RetryHint) (`Rejected` does, and boxed and `anyhow` errors that
        /// carry one; with the `tower` or `axum` feature, `http::Response` reads its `Retry-After`).
        /// The attribute reads it with nothing to write, for any error type that implements it:
        /// should such an error open the breaker (or come while the breaker opens on others), the
        /// breaker stays open at least that long, up to `max_error_timeout`. A hint alone does not
        /// open a closed breaker: the rule decides.
        ///
        /// ```
        /// use std::time::Duration;
        /// use resiliency::{breaker, Rejected, RetryHint};
        ///
        /// #[derive(Debug)]
        /// enum ApiError { Throttled(Duration), Refused(Rejected) }
        ///
        /// impl From<Rejected> for ApiError {
        ///     fn from(rejected: Rejected) -> Self { ApiError::Refused(rejected) }
        /// }
        ///
        /// impl RetryHint for ApiError {
        ///     fn retry_after(&self) -> Option<Duration> {
        ///         match self {
        ///             ApiError::Throttled(wait) => Some(*wait),
        ///             ApiError::Refused(rejected) => rejected.retry_after(),
        ///         }
        ///     }
        /// }
        ///
        /// #[breaker(error_threshold = 1, error_timeout = "5s")]
        /// async fn quote(throttled: bool) -> Result<u32, ApiError> {
        ///     if throttled { Err(ApiError::Throttled(Duration::from_secs(30))) } else { Ok(7) }
        /// }
        ///
        /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
        /// # async fn main() {
        /// assert!(quote(true).await.is_err()); // a 429 asking for 30 s opens it...
        /// let Err(ApiError::Refused(refused)) = quote(false).await else { unreachable!() };
        /// assert_eq!(refused.retry_after(), Some(Duration::from_secs(30))); // ...for 30 s, not 5
        /// # }
        /// ```
        ///
        /// Under `timeout` (or `half_open_timeout` for a probe), the body reads the time it has left
        /// with [`resiliency::time_left()`](crate::time_left) (or [`deadline()`](crate::deadline)),
        /// the tightest of the guards around it, to pass on as an upstream's timeout.
        ///
        /// # Blocking functions
        ///
        /// On a fn that is not `async` (a client such as `ureq`, `postgres` or `diesel`), the body runs
        /// on the caller's thread through [`Breaker::call_blocking`](crate::Breaker::call_blocking),
        /// with the same rules, arguments, names, run-time settings and metrics: a blocking
        /// `#[breaker(name = "db")]` and an async one share the breaker `db`. No tokio runtime is
        /// needed. The body becomes a closure called at once (`.call_blocking(move || -> Result<T, E> {
        /// .. })`), so `return`, `?`, `&self` and borrowed arguments work as in the fn.
        ///
        /// ```
        /// use resiliency::{breaker, Rejected};
        ///
        /// type BoxError = Box<dyn std::error::Error + Send + Sync>;
        ///
        /// #[breaker(error_threshold = 2, error_timeout = "30s")]
        /// fn query(id: u32) -> Result<u32, BoxError> {
        ///     if id == 0 {
        ///         return Err("no such row".into());
        ///     }
        ///     let row: u32 = "42".parse()?;
        ///     Ok(row + id)
        /// }
        ///
        /// assert_eq!(query(1).unwrap(), 43);
        /// assert!(query(0).is_err());
        /// assert!(query(0).is_err()); // the second error within 30 s opens it
        /// let refused = query(1).unwrap_err();
        /// assert!(refused.downcast_ref::<Rejected>().unwrap().is_circuit_open());
        /// ```
        ///
        /// Nothing can interrupt a blocking call, so `timeout` and `half_open_timeout` (and `capacity`,
        /// which needs `timeout`) are compile errors on a blocking fn: bound the work inside it (a socket
        /// or client timeout), or make the fn `async`. A `timeout` given to such a site at run time, or
        /// to a breaker shared with async fns, does not apply to its blocking calls. A blocking body that
        /// panics counts as an error (a probe that panics re-opens the breaker and gives its slot back),
        /// and the panic goes on to the caller.
        ///
        /// # Guarantees
        ///
        /// Whatever the code around it does, the breaker's own state stays consistent and no slot is lost:
        ///
        /// * **The body panics**: the call counts as an error (a probe that panics re-opens the breaker;
        ///   `count_if` is not asked, there is no error value), and the panic goes on to the caller.
        /// * **`count_if` panics**: the error counts as an error, and the panic goes on to the caller.
        /// * **The call is dropped** before it was polled, or while its body runs (cancelled, or abandoned
        ///   by the caller's own timeout): it counts neither way, and a probe's slot comes back only once
        ///   the body has been dropped, so `half_open_calls = 1` never lets two probe bodies live at once.
        /// * **A subscriber or a `tracing` layer panics** on a state change: the change stands and the
        ///   call goes on; the panic is caught, and only that announcement is lost.
        /// * **No time driver**: a breaker without `timeout` runs on any executor. With `timeout`, a call
        ///   that waits outside a tokio runtime, or on one built without `enable_time`, panics with
        ///   tokio's message at its first wait (as `tokio::time::timeout` does) and gives its slot back; a
        ///   call that answers on its first poll needs no timer and runs anywhere.
        /// * **Keyed families** never evict a breaker that calls in flight still hold: their outcomes land
        ///   on the breaker that the key's later calls use. A lookup racing a sweep never gets a breaker
        ///   the family no longer holds, and concurrent inserts never take it past `max_keys`. At most
        ///   one eviction sweep waits at a time.
        /// * **Settings**: `error_threshold`, `success_threshold` and `half_open_calls` are at most 65535;
        ///   the count rule's ring of error times (8 bytes per unit of `error_threshold`) is allocated at a
        ///   breaker's first error.
        /// * **`RESILIENCY_DISABLED`** accepts `1`, `true`, `yes`, `on` (any case); `0`, `false`, `no`,
        ///   `off` or empty leave breakers on, and any other value is reported once as a warning.
    }
    item { pub use resiliency_macros::breaker; }
});

resiliency_runtime::__private::too_busy_settings!(crate::attributes::documented! {
    before {
        /// Load shedding at an `async fn`'s entry when the runtime lags, as toobusy-js does for Node's
        /// event loop, with the signals its users asked for; at a blocking fn's entry, by calls in flight
        /// and latency.
        ///
        /// ```
        /// use resiliency::{too_busy, Rejected};
        ///
        /// #[too_busy]                                  // the runtime's lag, the default max_lag
        /// async fn ping() -> Result<&'static str, Rejected> {
        ///     Ok("pong")
        /// }
        ///
        /// #[too_busy(max_in_flight = 1)]               // one call at a time; the next is refused
        /// async fn exclusive() -> Result<(), Rejected> {
        ///     tokio::task::yield_now().await;
        ///     Ok(())
        /// }
        ///
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// assert_eq!(ping().await.unwrap(), "pong");
        /// let (a, b) = tokio::join!(exclusive(), exclusive());
        /// assert!(a.is_ok());
        /// assert!(b.unwrap_err().is_too_busy());
        /// # }
        /// ```
        ///
        /// # Arguments
        ///
        /// | argument | meaning | default |
        /// |---|---|---|
        /// | `name = "checkout"` | calls with one name share one guard (and its settings, metrics and `too_busy::get`) | the fn's path, e.g. `my_app::api::checkout` |
    }
    after {
        /// | `fallback = path` | a fn or method called instead when the guard sheds the call: with the fn's arguments and the `Rejected`; sync or `async`; see [Fallbacks](macro@crate::breaker#fallbacks). For fns returning a `Result` | none: the refusal is the caller's `Err` |
        /// | `fallback_on = "errors"` | the fallback covers every `Err`, refusals included, and gets the fn's error type | `"refusals"` |
        /// | `crate = "::resiliency"` | the path to this crate, when re-exported | `::resiliency` |
        ///
        /// `max_in_flight` may also be a `u32` expression and the durations `Duration` expressions, such
        /// as a `const`, evaluated once, at the first call, and checked then by the rules the literals
        /// are checked by at compile time (see [`#[breaker]`](macro@crate::breaker), "Settings from
        /// code"): a value they refuse is an error-level `tracing` event, and that signal is left out
        /// (with none left, the guard checks the lag, as `#[too_busy]` does). Each setting can also be
        /// overridden by name at run time ([`settings`](mod@crate::settings),
        /// `RESILIENCY_TOO_BUSY__<NAME>__<SETTING>`), the site's name being its `name` (checked as
        /// `#[breaker]`'s: a non-empty string literal) or else the fn's path. Sites of one name share one
        /// guard with a guard registered from code or by a `TooBusyLayer` by that name, the first set up
        /// giving its options; a site whose own options differ logs the difference (a settings error).
        ///
        /// ```
        /// use std::time::Duration;
        /// use resiliency::{too_busy, Rejected};
        ///
        /// const LIMIT: u32 = 256;
        ///
        /// #[too_busy(max_in_flight = LIMIT, max_latency = Duration::from_millis(200))]
        /// async fn handler() -> Result<(), Rejected> {
        ///     Ok(())
        /// }
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// # handler().await.unwrap();
        /// # }
        /// ```
        ///
        /// `max_in_flight` and `max_latency` are checked only when named. The lag is checked when
        /// `max_lag` is named, or when neither `max_in_flight` nor `max_latency` is: naming either
        /// of them without `max_lag` turns the lag check off.
        ///
        /// | you write | lag | in flight | latency |
        /// |---|---|---|---|
        /// | `#[too_busy]` | checked, against the default `max_lag` ([`too_busy::max_lag()`](crate::too_busy::max_lag), which [`too_busy::set_max_lag`](crate::too_busy::set_max_lag) changes) | not checked | not checked |
        /// | `#[too_busy(max_lag = "20ms")]` | checked, against 20 ms | not checked | not checked |
        /// | `#[too_busy(max_in_flight = 100)]` | **not checked** | checked | not checked |
        /// | `#[too_busy(max_in_flight = "auto")]` | **not checked** | checked, learned limit | not checked |
        /// | `#[too_busy(max_latency = "200ms")]` | **not checked** | not checked | checked |
        /// | `#[too_busy(max_in_flight = 100, max_latency = "200ms")]` | **not checked** | checked | checked |
        /// | `#[too_busy(max_in_flight = 100, max_lag = "50ms")]` | checked, against 50 ms | checked | not checked |
        /// | `#[too_busy(max_latency = "200ms", max_lag = "50ms")]` | checked, against 50 ms | not checked | checked |
        ///
        /// The same rule applies to the settings in force, the attribute's with the run-time
        /// overrides on top: an override of `max_in_flight` on a bare `#[too_busy]` site turns its
        /// lag check off. The lag is only measured on a tokio runtime with a time driver.
        ///
        /// Checked signals combine: a call is refused when any of them says so, at once (no queueing),
        /// with a [`Rejected`](crate::Rejected) that says which signal refused it. The lag monitor starts
        /// by itself on the caller's tokio runtime (only for guards that check lag); configure it from
        /// code with `resiliency::too_busy`.
        ///
        /// The fn returns `Result<T, E>` with `E: From<Rejected>`; with the `axum` feature it may also
        /// return `axum::response::Response` or `impl IntoResponse`, and a refusal is a
        /// `503 Service Unavailable` with a `Retry-After` header and a body that names nothing inside the
        /// service (the full message goes to `tracing`; see `resiliency::http`, which also turns a
        /// `Rejected` kept inside an `anyhow::Error` or any error's `source()` chain into that response).
        ///
        /// # `max_in_flight = "auto"`
        ///
        /// Most handlers wait on something with a capacity of its own, a database pool or an upstream,
        /// and the runtime never lags while they do: latency grows until every caller times out. A
        /// fixed `max_in_flight` helps if it matches today's capacity. `"auto"` learns it instead, as
        /// TCP learns a congestion window: calls beyond the limit are refused at once, and after each
        /// window of calls (at least 100 ms and twice what calls take, 40 calls or fewer where few come;
        /// after a window of fewer than 10 calls, 5 calls over 200 ms) the limit moves on what that
        /// window showed.
        ///
        /// **What it reacts to: queueing.** A call that waits for a busy dependency waits before its own
        /// service starts, so a queue delays fast calls as much as slow ones. The limit reads the
        /// queue, in calls, from the rise of the successful calls' 10th percentile latency over what it
        /// is when nothing waits (or the rise of their mean beyond its noise, for a queue only some
        /// calls meet), times the rate at which they complete (Little's law). A queue above a tenth of
        /// the limit twice in a row, or above three tenths once, cuts the limit to what the dependency
        /// served, plus a little; with no queue and calls pressing against the limit (one refused, or
        /// as many running as it allows), it grows, toward the demand at first.
        ///
        /// **What it ignores.** Uneven latency: a dependency whose calls take 5 ms or 400 ms, or have a
        /// lognormal or heavy tail, shows no queue where nothing waits, whatever the concurrency, so the
        /// limit only grows until nothing is refused. Failed calls: an `Err` or a 5xx response that
        /// comes back at once says nothing of how long the dependency takes, so failed calls never feed
        /// the latency; a steady share of them (a handler's `404`s) moves nothing, and only a spike (at
        /// least 25% of a window, 20 points above the usual share) cuts the limit by a quarter. A
        /// dependency that became slower for good: each cut is checked against the next window; had the
        /// wait been a queue, the cut would have taken it away, so a wait that stays is the calls
        /// becoming slower, and the limit goes back to what the dependency serves at the new latency
        /// within a couple of windows (unless the calls completed per second stayed as high with fewer
        /// in flight, beyond their noise: then the cut took only part of a queue, and the rest is cut
        /// on in turn).
        ///
        /// A limit that starts above the dependency's capacity is brought down by the queue it makes.
        /// Where the latency measured first already held a queue, service times are even and the
        /// slots few, the limit may stay above them, a queue of a few holds, until probes (a window at
        /// a lower limit: after the first 10 windows that pressed against the limit, then one in 50)
        /// find lower. On a pool of a few slots, whose queued calls take seconds, windows close on a
        /// few calls, so a limit started at the default 20 comes down within a second or two: pools
        /// of 2 and 4 slots of 100 ms keep a limit within three times their slots, a pool of 1 slot
        /// within five (a queue of one call is a whole hold there); the calls admitted before it came
        /// down wait behind those ahead of them. Set `auto_initial` near the capacity where it is
        /// known: started there, pools of 1 to 4 slots keep a limit within three times their slots
        /// from the start. A window
        /// whose calls stayed below half the limit never takes it below `auto_initial`, so a quiet
        /// service is never starved. The limit stays between `auto_min` and `auto_max`, and is read from
        /// code with
        /// [`too_busy::get`](crate::too_busy::get)`(name)?.`[`in_flight_limit()`](crate::too_busy::TooBusy::in_flight_limit),
        /// in `tracing` events (debug, target `resiliency::too_busy`, at each change) and, with the
        /// `metrics` feature, as the gauge `resiliency_too_busy_in_flight_limit`. Admission costs what a
        /// fixed limit costs; a completed call adds its latency to the window's counters (a clock read
        /// and a few atomic adds), and the call that ends a window computes the next limit.
        ///
        /// ```
        /// use std::time::Duration;
        /// use resiliency::{too_busy, Rejected};
        ///
        /// // A dependency with 4 slots: each call holds one for 20 ms.
        /// static SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(4);
        ///
        /// #[too_busy(max_in_flight = "auto", auto_min = 2)]
        /// async fn query() -> Result<(), Rejected> {
        ///     let _slot = SLOTS.acquire().await.unwrap();
        ///     tokio::time::sleep(Duration::from_millis(20)).await;
        ///     Ok(())
        /// }
        ///
        /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
        /// # async fn main() {
        /// // 40 callers at once, for 3 seconds: far more than the 4 slots serve without a queue.
        /// let callers = (0..40).map(|_| async {
        ///     let (mut waited, end) = (Vec::new(), tokio::time::Instant::now() + Duration::from_secs(3));
        ///     while tokio::time::Instant::now() < end {
        ///         let sent = tokio::time::Instant::now();
        ///         match query().await {
        ///             Ok(()) => waited.push(sent.elapsed()),
        ///             Err(_) => tokio::time::sleep(Duration::from_millis(5)).await, // refused: back off
        ///         }
        ///     }
        ///     waited.split_off(waited.len() / 2) // the second half: once the limit was learned
        /// });
        /// let waited: Vec<Duration> = futures::future::join_all(callers).await.concat();
        /// let (_, name) = resiliency::settings::sites()
        ///     .into_iter()
        ///     .find(|(_, name)| name.ends_with("::query"))
        ///     .unwrap();
        /// let limit = resiliency::too_busy::get(&name).unwrap().in_flight_limit().unwrap();
        /// assert!(limit < 20, "{limit}"); // down from where it started, toward the 4 slots
        /// // Unguarded, 40 callers on 4 slots would wait 10 holds (200 ms) a call; admitted ones wait
        /// // a few (a start far above capacity leaves a queue of a few holds: see above).
        /// let mean = waited.iter().sum::<Duration>() / waited.len() as u32;
        /// assert!(mean < Duration::from_millis(150), "{mean:?}");
        /// # }
        /// ```
        ///
        /// # Blocking functions
        ///
        /// On a fn that is not `async`, the body runs on the caller's thread through
        /// [`TooBusy::call_blocking`](crate::too_busy::TooBusy::call_blocking): `max_in_flight` and
        /// `max_latency` work as for an async fn (a panicking body gives its slot back), and no tokio
        /// runtime is needed. The runtime's lag can only be measured by an async runtime, so a blocking
        /// fn needs `max_in_flight` or `max_latency` (`#[too_busy]` alone is a compile error, and so is
        /// `max_lag`), and it returns `Result<T, E>`.
        ///
        /// ```
        /// use std::sync::Barrier;
        /// use resiliency::{too_busy, Rejected};
        ///
        /// #[too_busy(max_in_flight = 1)]
        /// fn render(inside: &Barrier, done: &Barrier) -> Result<&'static str, Rejected> {
        ///     inside.wait();
        ///     done.wait();
        ///     Ok("pdf")
        /// }
        ///
        /// let (inside, done) = (Barrier::new(2), Barrier::new(2));
        /// std::thread::scope(|s| {
        ///     let first = s.spawn(|| render(&inside, &done));
        ///     inside.wait(); // the first call holds the one slot
        ///     assert!(render(&inside, &done).unwrap_err().is_too_busy());
        ///     done.wait();
        ///     assert_eq!(first.join().unwrap().unwrap(), "pdf");
        /// });
        /// ```
        ///
        /// # Guarantees
        ///
        /// Whatever user code does, the guard and the lag monitor stay consistent; the
        /// [`too_busy`](mod@crate::too_busy) module's docs say more.
        ///
        /// * A body that panics gives its `max_in_flight` slot back once the call is dropped, and the
        ///   time it ran counts toward `max_latency`.
        /// * A call dropped while it runs gives its slot back only after its body has been dropped (never
        ///   more than `max_in_flight` bodies at once); the time it ran counts toward `max_latency`.
        /// * On a runtime without a time driver the lag signal is off, said once by a `tracing` warning;
        ///   `max_in_flight` and `max_latency` still refuse. (tokio
        ///   panics when a timer is created there; the monitor catches that once per runtime, with no
        ///   message printed, which under
        ///   `panic = "abort"` ends the process: enable time on runtimes that run guarded calls.)
        /// * An `on_lag` callback or a `tracing` subscriber that panics does not stop the lag monitor,
        ///   which keeps its lag, and a refusal whose event panics keeps no slot.
        /// * Under a paused clock, `tokio::time::advance` is no lag.
        /// * Threads that come and go leave one monitor task per runtime, not one per thread.
        /// * With `max_in_flight = "auto"`, panicking and cancelled calls give their slots back and count
        ///   as failures, a subscriber that panics as a window closes (even in an unwinding call's drop)
        ///   loses only its event, and the limit is learned on a runtime without a time driver too.
        /// * Durations too long for nanoseconds in a `u64` saturate instead of wrapping or panicking.
    }
    item { pub use resiliency_macros::too_busy; }
});

resiliency_runtime::__private::race_retry_settings!(crate::attributes::documented! {
    before {
        /// Raced retries under one deadline (proposed for Zalando's perron client): a retry does not
        /// abort the attempt in flight but races it.
        ///
        /// ```
        /// use std::time::Duration;
        /// use resiliency::{race_retry, Rejected};
        ///
        /// struct Directory;
        ///
        /// impl Directory {
        ///     #[race_retry(retries = 2, after = "150ms", total = "450ms")]
        ///     async fn lookup(&self, id: u64, region: &str) -> Result<String, Rejected> {
        ///         // The first attempt hangs on a slow replica; the second answers in 20 ms.
        ///         let slow = ATTEMPTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0;
        ///         let wait = if slow { 5_000 } else { 20 };
        ///         tokio::time::sleep(Duration::from_millis(wait)).await;
        ///         Ok(format!("user {id} in {region}"))
        ///     }
        /// }
        /// static ATTEMPTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        ///
        /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
        /// # async fn main() {
        /// let started = tokio::time::Instant::now();
        /// let user = Directory.lookup(7, "eu").await.unwrap();
        /// assert_eq!(user, "user 7 in eu");
        /// // The second attempt started at 150 ms, answered at 170 ms; the first was cancelled.
        /// assert_eq!(started.elapsed(), Duration::from_millis(170));
        /// # }
        /// ```
        ///
        /// | argument | meaning | default |
        /// |---|---|---|
        /// | `name = "users.lookup"` | calls with one name share one policy (its budget, learned latencies, stats, settings and metrics) | the fn's path, e.g. `my_app::db::lookup` |
    }
    after {
        /// | `retry_if = path` | `fn(&E) -> bool` (or a closure): an error for which it is false ends the call at once | every error |
        /// | `attempt = n` | the name the body reads the attempt's number by, a `u32` counted from 0: 0 for the first attempt, 1 for the first retry (reports count from 1); see [Attempt-aware hedging](#attempt-aware-hedging) | none |
        /// | `fallback = path` | a fn or method (`Self::cached`) called instead when the call is refused: with the fn's arguments (`self` first, owned ones cloned before the call) and the `Rejected`; sync or `async`; see [Fallbacks](macro@crate::breaker#fallbacks) | none: the refusal is the caller's `Err` |
        /// | `fallback_on = "errors"` | the fallback covers every `Err`, refusals included, and gets the fn's error type | `"refusals"` |
        /// | `crate = "..."` | the path of this crate, if renamed | `::resiliency` |
        ///
        /// `retries` and `max_attempts_in_flight` may also be `u32` expressions, `budget` and `backoff_factor` `f64` expressions, and
        /// `after`, `total`, `each`, `backoff` and `backoff_max` `Duration` expressions (an `after`
        /// expression is a fixed delay; a percentile is a literal, as is `"off"`), such as a `const`,
        /// evaluated once, at the first call, and checked then by the rules the literals are checked by
        /// at compile time (see [`#[breaker]`](macro@crate::breaker), "Settings from code"): a value they
        /// refuse is an error-level `tracing` event and falls back to its default (`total` has none: with
        /// `total` refused, each call runs its body once, with no deadline). Each setting can also be
        /// overridden by name at run time ([`settings`](mod@crate::settings),
        /// `RESILIENCY_RACE_RETRY__<NAME>__<SETTING>`), the site's name being its `name` (checked as
        /// `#[breaker]`'s: a non-empty string literal) or else the fn's path. Sites of one name share one
        /// policy with a policy registered from code or by a `RaceRetryLayer` by that name, the first set
        /// up giving its options; a site whose own options differ logs the difference (a settings error).
        ///
        /// ```
        /// use std::time::Duration;
        /// use resiliency::{race_retry, Rejected};
        ///
        /// const TOTAL: Duration = Duration::from_millis(450);
        ///
        /// #[race_retry(after = TOTAL / 3, total = TOTAL)]
        /// async fn lookup(id: u64) -> Result<u64, Rejected> {
        ///     Ok(id)
        /// }
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// # assert_eq!(lookup(7).await.unwrap(), 7);
        /// # }
        /// ```
        ///
        /// Semantics: attempt 1 starts at once; attempt k + 1 starts `after` after attempt k started, or
        /// sooner when an attempt fails: after that failure's backoff; the first `Ok` is returned and
        /// every other attempt is dropped (cancelled) before the call returns; when all attempts fail, the
        /// last error is returned (at once when the next backoff would end past the deadline). With
        /// `max_attempts_in_flight = n`, an attempt that is due waits until fewer than `n` run; with
        /// `max_attempts_in_flight = 1` the race is a plain retry under `total`, each attempt started
        /// once the one before it failed (still no sooner than its backoff or a Retry-After hint allow).
        ///
        /// The defaults keep extra load bounded without asking: the budget (Finagle's retry budget, on by
        /// default there too) stops an outage from multiplying the load by `retries + 1`, and the backoff
        /// spreads the retries of failing calls instead of sending them at once. With the defaults and
        /// `after = "150ms"`, a call whose attempts fail fast waits up to 37.5 ms, then up to 75 ms; with
        /// `backoff = "off"` it would send all three within milliseconds. The backoff's scale follows the
        /// call's own `after` (the time an attempt is expected to take): with two retries its waits add at
        /// most three quarters of `after`, three eighths on average, so a retry after one transient error
        /// still comes well before the staggered start. `budget = "off"` and `backoff = "off"` restore
        /// every extra attempt, at once.
        ///
        /// Attempts run concurrently inside the caller's task (no `tokio::spawn`), so borrowed arguments
        /// and `&self` methods work. Every attempt gets its own copy of each argument: references and
        /// `&self` are copied, owned values cloned (so they must be `Clone`), an owned `self` too (`self`,
        /// `mut self`, `self: Arc<Self>`). `&mut self` (`Pin<&mut Self>` too) and `&mut` arguments cannot
        /// be shared by attempts running at once and are compile errors that name the argument. For the
        /// same reason the fn must be `async`: a blocking fn is a compile error (call blocking code with
        /// `tokio::task::spawn_blocking` inside an `async fn`, or put `#[breaker]` alone on it).
        ///
        /// Every attempt's start, duration and outcome, losers included, is a `tracing` event (target
        /// `resiliency::race_retry`, with the site's `name` and the `attempt` counted from 1;
        /// durations in whole microseconds: `started_us`, `elapsed_us`), as is
        /// each backoff (`backoff_us`), and what [`race_retry::observe`](crate::race_retry::observe) returns to the
        /// caller; [`race_retry::stats`](crate::race_retry::stats) counts extra attempts, wins by them, budget
        /// refusals and deadlines.
        ///
        /// # Attempt-aware hedging
        ///
        /// `attempt = n` names the attempt's number in the body, counted from 0: 0 for the first
        /// attempt, 1 for the first retry, and so on. The reports count from 1: attempt `n` of the
        /// body is `Attempt::number` `n + 1` in `race_retry::observe`, `attempt = n + 1` in the
        /// `tracing` events, and the label `attempt="n + 1"` of `resiliency_race_wins_total`. With it, a retry can
        /// go elsewhere, as "The Tail at Scale" sends a hedged request to another replica. From code,
        /// [`race_retry::numbered`](crate::race_retry::numbered) gives a closure the same number.
        ///
        /// ```
        /// use std::time::Duration;
        /// use resiliency::{race_retry, Rejected};
        ///
        /// static REPLICAS: [&str; 2] = ["replica-a", "replica-b"];
        ///
        /// async fn get(replica: &'static str, id: u64) -> Result<String, Rejected> {
        ///     if replica == "replica-a" {
        ///         tokio::time::sleep(Duration::from_secs(5)).await; // a slow replica
        ///     }
        ///     Ok(format!("user {id} from {replica}"))
        /// }
        ///
        /// #[race_retry(retries = 1, after = "100ms", total = "1s", attempt = n)]
        /// async fn lookup(id: u64) -> Result<String, Rejected> {
        ///     get(REPLICAS[n as usize % REPLICAS.len()], id).await
        /// }
        ///
        /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
        /// # async fn main() {
        /// // Attempt 0 goes to replica a and hangs; attempt 1, at 100 ms, to replica b.
        /// assert_eq!(lookup(7).await.unwrap(), "user 7 from replica-b");
        /// # }
        /// ```
        ///
        /// A fallback (`fallback = path`) answers when the race ends with its own refusal (its
        /// deadline passed): see [Fallbacks](macro@crate::breaker#fallbacks).
        ///
        /// **Retry-After, and the time left.** After an attempt fails with an error whose
        /// [`RetryHint`](crate::RetryHint) asks for a wait (a `Retry-After`; an inner breaker's
        /// time until it half-opens, which `Rejected` carries), no attempt starts before that wait
        /// is over, the staggered one neither; if it would end past `total`, the call ends at once
        /// with that error. Attempts in flight keep racing meanwhile. Each attempt reads the time it
        /// has left with [`resiliency::time_left()`](crate::time_left): the sooner of `total` and
        /// its own `each`, or of an outer guard's deadline.
        ///
        /// **With `#[breaker]`.** Attributes of this crate apply top to bottom (the first written is the
        /// outermost). `#[breaker]` above `#[race_retry]` puts the breaker around the whole race: one
        /// outcome per call, and an open breaker refuses the call before any attempt. `#[race_retry]`
        /// above `#[breaker]` puts the breaker around each attempt: each attempt's error counts, and
        /// once it opens, an attempt it refuses tells the race when it half-opens (its `Rejected`'s
        /// `retry_after`, which a boxed or `anyhow` error carries, and an error type of your own
        /// through `RetryHint`): the next attempt waits until then if that is before `total`, and
        /// the call ends at once with the refusal otherwise.
        ///
        /// # Guarantees
        ///
        /// Whatever the attempts do, the fn's shared state (its budget, stats and learned latencies)
        /// stays consistent and every attempt's future is dropped by the time the call is:
        ///
        /// * **A body that panics** ends the call with that panic, at once: it goes on to the caller,
        ///   the other attempts are dropped (cancelled), [`race_retry::observe`](crate::race_retry::observe) reports
        ///   that attempt as `Outcome::Panicked` and the others as `Abandoned`, the extra attempts that
        ///   started count in the stats, and the next call runs as usual. So does a panic in the copy of
        ///   an argument made for an attempt, and in the destructor of an attempt being cancelled.
        /// * **A `retry_if` that panics** on an attempt's error does the same, that attempt reported as
        ///   panicked.
        /// * A call whose poll panicked is over: polling it again panics at once, and runs nothing.
        /// * **A call dropped** at any await point (an outer timeout, `select!`) drops its attempts then,
        ///   reported as abandoned; one dropped before its first poll made no attempt and counts nothing.
        ///   An attempt's destructor that takes long delays the call's return by as long, nothing more.
        /// * **The slots of `max_attempts_in_flight`** are a call's own and go with its attempts: an
        ///   attempt that ends (an answer, an error, past `each`) frees its slot at once, and a call
        ///   dropped or ended by a panic holds none after it; no call ever waits for another's.
        /// * **Without a time driver**: outside a tokio runtime there are no timers (attempts start only
        ///   when one fails, at once, and there is no deadline). On a runtime built without
        ///   `enable_time`, a call whose attempts answer without waiting (or fail without waiting, with
        ///   `backoff = "off"`) runs; one that has to wait (for an attempt or a backoff) panics with
        ///   tokio's "timers are disabled" (as `tokio::time::timeout` does there), its attempts dropped
        ///   and the extra ones it started counted.
        /// * **Extreme settings** neither panic nor allocate by their value: `total`, `after` or `each`
        ///   too long for an `Instant` (up to `Duration::MAX` through `race_retry::RaceRetry`) mean never,
        ///   `retries` is at most 16, a `budget` share below 0.001 counts as 0.001, a backoff's base or
        ///   max up to `Duration::MAX` saturates (a wait past the deadline starts nothing) and a factor
        ///   that is NaN, infinite or below 1 (through `race_retry::RaceRetry`) is clamped, and a call spawns no
        ///   task.
    }
    item { pub use resiliency_macros::race_retry; }
});

resiliency_runtime::__private::timeout_settings!(crate::attributes::documented! {
    before {
        /// A time limit on one call of an `async fn`: past `total`, its body is dropped and the call
        /// returns `Err(E::from(Rejected))` ([`Rejected::is_timeout`](crate::Rejected::is_timeout);
        /// with the `axum` feature, a `504 Gateway Timeout`).
        ///
        /// ```
        /// use std::time::Duration;
        /// use resiliency::{timeout, Rejected};
        ///
        /// struct Catalog;
        ///
        /// impl Catalog {
        ///     #[timeout("200ms")]
        ///     async fn item(&self, id: u64, stuck: bool) -> Result<String, Rejected> {
        ///         // What an upstream request would carry as its own timeout.
        ///         let left = resiliency::time_left().expect("under a time limit");
        ///         if stuck {
        ///             tokio::time::sleep(Duration::from_secs(5)).await;
        ///         }
        ///         Ok(format!("item {id} (x-timeout-ms: {})", left.as_millis()))
        ///     }
        /// }
        ///
        /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
        /// # async fn main() {
        /// assert_eq!(Catalog.item(7, false).await.unwrap(), "item 7 (x-timeout-ms: 200)");
        /// let started = tokio::time::Instant::now();
        /// let err = Catalog.item(8, true).await.unwrap_err();
        /// assert!(err.is_timeout());
        /// assert_eq!(started.elapsed(), Duration::from_millis(200));
        /// # }
        /// ```
        ///
        /// `#[timeout("2s")]` is short for `#[timeout(total = "2s")]`.
        ///
        /// | argument | meaning | default |
        /// |---|---|---|
        /// | `name = "catalog"` | calls with one name share one time limit (its settings by name and metrics; with a `Timeout` registered from code or by a `TimeoutLayer` by that name) | the fn's path, e.g. `my_app::catalog::item` |
    }
    after {
        /// | `fallback = path` | a fn or method (`Self::cached`) called instead when the call runs out of time: with the fn's arguments (`self` first, owned ones cloned before the call) and the `Rejected`; sync or `async`; see [Fallbacks](macro@crate::breaker#fallbacks) | none: the refusal is the caller's `Err` |
        /// | `fallback_on = "errors"` | the fallback covers every `Err`, the time limit's included, and gets the fn's error type | `"refusals"` |
        /// | `crate = "..."` | the path of this crate, if renamed | `::resiliency` |
        ///
        /// `total` may also be a `Duration` expression, such as a `const`, evaluated once, at the
        /// first call, and checked then (a zero is an error-level `tracing` event, and the calls then
        /// run with no limit until the settings by name give one). It can be overridden by name at
        /// run time ([`settings`](mod@crate::settings), `RESILIENCY_TIMEOUT__<NAME>__TOTAL=3s`, or
        /// `[timeout."name"] total = "3s"` in a settings file), the site's name being its `name` or else
        /// the fn's path; a call keeps the `total` it started with. The same time limit is usable from
        /// code ([`timeout::Timeout`](crate::timeout::Timeout)) and, with the `tower` feature, as a
        /// `TimeoutLayer`.
        ///
        /// **When the time counts from.** From the body's first wait: a body that answers on its first
        /// poll reads no clock and makes no timer, so a call that does not wait costs a few
        /// instructions. A body that reads its deadline before it first waits
        /// ([`resiliency::deadline`](crate::deadline), [`time_left`](crate::time_left)) starts the
        /// clock then. The body is polled before the timer: an answer that comes as the time runs out
        /// is kept.
        ///
        /// **In a stack.** Attributes of this crate apply top to bottom (the first written is the
        /// outermost). `#[timeout]` above `#[race_retry]` bounds the whole race; below `#[breaker]`,
        /// a call it cuts off is an error the breaker counts (as the breaker's own `timeout` would
        /// be); above `#[too_busy]`, a refusal comes back at once, well within it. Nested time limits
        /// give the body the sooner deadline.
        ///
        /// # Guarantees
        ///
        /// A time limit holds no slot and no shared state but its counts:
        ///
        /// * **A body that panics**: the panic goes on to the caller; the call counts neither as
        ///   completed nor as timed out.
        /// * **A call dropped** at any await point drops its body and timer with it and counts
        ///   nothing; one dropped before its first poll never ran.
        /// * **Without a time driver**: a body that answers on its first poll runs anywhere. One that
        ///   waits, outside a tokio runtime or on one built without `enable_time`, panics at its first
        ///   wait with tokio's "timers are disabled" (as `tokio::time::timeout` does there), its body
        ///   dropped.
        /// * **Extreme settings**: a `total` too long for an `Instant` (up to `Duration::MAX` through
        ///   `timeout::Timeout`) means never, and no timer is made; a `total` of zero is refused (a
        ///   compile error for a literal).
        /// * **A blocking fn** is refused at compile time: nothing can cut it off while it runs.
    }
    item { pub use resiliency_macros::timeout; }
});

resiliency_runtime::__private::rate_limit_settings!(crate::attributes::documented! {
    before {
        /// A rate limit on an `async fn` or a blocking fn: at most `rate` calls per period, paced
        /// evenly, with up to `burst` at once (GCRA, one atomic word); a call over it is refused at
        /// once with `Err(E::from(Rejected))` ([`Rejected::is_rate_limited`](crate::Rejected::is_rate_limited),
        /// [`retry_after`](crate::Rejected::retry_after): when its permit frees; with the `axum`
        /// feature a `429 Too Many Requests` with `Retry-After`), or waits for its permit up to
        /// `max_wait`.
        ///
        /// ```
        /// use std::time::Duration;
        /// use resiliency::{rate_limit, Rejected};
        ///
        /// struct Partner;
        ///
        /// impl Partner {
        ///     // The partner's API takes 5 calls a second; a call waits up to 500 ms for its turn.
        ///     #[rate_limit(rate = "5/s", burst = 1, max_wait = "500ms")]
        ///     async fn send(&self, order: u64) -> Result<u64, Rejected> {
        ///         Ok(order)
        ///     }
        /// }
        ///
        /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
        /// # async fn main() {
        /// let started = tokio::time::Instant::now();
        /// let (a, b, c) = tokio::join!(Partner.send(1), Partner.send(2), Partner.send(3));
        /// assert_eq!((a.unwrap(), b.unwrap(), c.unwrap()), (1, 2, 3));
        /// // One permit every 200 ms, in the order the calls came.
        /// assert_eq!(started.elapsed(), Duration::from_millis(400));
        /// // Three more at once: their turns are 200, 400 and 600 ms away; the last is past
        /// // `max_wait`, and refused at once with the time until its permit.
        /// let (d, e, f) = tokio::join!(Partner.send(4), Partner.send(5), Partner.send(6));
        /// assert_eq!((d.unwrap(), e.unwrap()), (4, 5));
        /// assert_eq!(f.unwrap_err().retry_after(), Some(Duration::from_millis(600)));
        /// # }
        /// ```
        ///
        /// `#[rate_limit("100/s")]` is short for `#[rate_limit(rate = "100/s")]`.
        ///
        /// | argument | meaning | default |
        /// |---|---|---|
        /// | `name = "partner-api"` | calls with one name share one rate limit (its permits, settings by name and metrics; with a `RateLimit` registered from code or by a `RateLimitLayer` by that name) | the fn's path, e.g. `my_app::partner::send` |
        /// | `key = client_ip` | a limit per key: an expression of the fn's arguments of any `Hash` type (`&str`, numbers, tuples), evaluated at each call before the body runs; each key gets `rate` and `burst` of its own | none: one limit for every call |
    }
    after {
        /// | `fallback = path` | a fn or method (`Self::cached`) called instead when the call is refused: with the fn's arguments (`self` first, owned ones cloned before the call) and the `Rejected`; sync or `async`; see [Fallbacks](macro@crate::breaker#fallbacks) | none: the refusal is the caller's `Err` |
        /// | `fallback_on = "errors"` | the fallback covers every `Err`, refusals included, and gets the fn's error type | `"refusals"` |
        /// | `crate = "..."` | the path of this crate, if renamed | `::resiliency` |
        ///
        /// `rate` may also be an expression of type [`rate_limit::Rate`](crate::rate_limit::Rate)
        /// (`Rate::per_second(LIMIT)`), `burst` a `u32` and `max_wait` a `Duration` expression, each
        /// evaluated once, at the first call, and checked then. Each can be overridden by name at run
        /// time ([`settings`](mod@crate::settings): `RESILIENCY_RATE_LIMIT__<NAME>__RATE=200/s`, or
        /// `[rate_limit."name"] rate = "200/s"` in a settings file); a change keeps the calls admitted
        /// counting, so it neither frees a new burst nor refuses what the old rate let in.
        ///
        /// **The rule.** With `interval = period / count` (`"100/s"`: 10 ms), a call is admitted while
        /// the calls admitted so far, paced at one per interval, would not run more than `burst`
        /// intervals ahead of now. Over any span `t` at most `t / interval + burst` calls are admitted,
        /// from however many tasks and threads. A refused call's `retry_after` is when its permit
        /// frees: a call made then is admitted unless another took the permit first.
        ///
        /// **Keys (`key = ...`).** Each key has an arrival time of its own, filed by a hash seeded at
        /// random per limit (keys from requests cannot be chosen to collide). At most `max_keys` are
        /// held: when a new key finds them all, keys at rest (their permits all free again, as good
        /// as new: dropping them loses nothing) are swept out first; if every key held is busy, the
        /// new key shares one limit with the other keys that do not fit until keys come to rest.
        /// A refusal names no key.
        ///
        /// **Waiting (`max_wait`).** A call whose permit frees within `max_wait` takes it at once and
        /// waits for it (so calls are served in the order they came); one whose permit is further away
        /// is refused at once, with no wait. A call that would wait past the deadline of a guard
        /// around it ([`resiliency::deadline`](crate::deadline)) is refused at once. A call dropped
        /// while it waits gives its permit back when no later call has taken one since.
        ///
        /// **In a stack.** Attributes of this crate apply top to bottom (the first written is the
        /// outermost). `#[rate_limit]` above `#[breaker]` refuses before the breaker counts anything;
        /// below it, a refusal is an error the breaker counts (and an outbound call refused by its
        /// own limit is not the upstream failing): put the rate limit outside. Under `#[race_retry]`,
        /// each attempt takes a permit, and a refused attempt's `retry_after` paces the next.
        ///
        /// # Guarantees
        ///
        /// * **A body that panics** or **a call dropped** while its body runs: its permit was spent
        ///   when it was admitted; nothing else is held.
        /// * **A call dropped** before its first poll took no permit; one dropped while it waits gives
        ///   its permit back when no later call has taken one since.
        /// * **Without a time driver**: admission reads the clock and sets no timer, so a limit without
        ///   `max_wait` works on any executor. A call that must wait, outside a tokio runtime or on one
        ///   built without `enable_time`, panics at its first poll with tokio's "timers are disabled",
        ///   its permit given back.
        /// * **A blocking fn** is admitted or refused the same way, on the caller's thread; with
        ///   `max_wait`, it sleeps the thread until its permit frees.
        /// * **Extreme settings**: a rate's interval is at least 1 ns; a burst or a `max_wait` of any
        ///   size saturates rather than wraps.
    }
    item { pub use resiliency_macros::rate_limit; }
});
