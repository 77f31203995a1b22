//! A refused call takes from tokio's cooperative budget, as tokio's own resources do: a loop that
//! meets nothing but refusals (a client retrying, a load test) yields now and then, so timers and
//! other tasks on the same runtime keep running. Each test bounds its wait from a thread outside
//! the runtime, so that a loop that never yields fails the test rather than hanging it.

use crate::support;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use resiliency::{breaker, too_busy, Breaker, Rejected};
use support::BoxError;
use tokio::runtime::{Builder, Runtime};

/// How long a timer beside a refusing loop may take to fire before the test fails.
const BOUND: Duration = Duration::from_secs(5);

/// Refused calls the loop makes before the timer is set, so that it is refusing by then.
const WARM_UP: u64 = 1_000;

/// A multi-thread runtime with one worker: a task that never yields holds it, and with it the
/// time driver.
fn one_worker() -> Runtime {
    Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

fn current_thread() -> Runtime {
    Builder::new_current_thread().enable_all().build().unwrap()
}

/// Runs `refusing` (a loop of refused calls, each checked with `refused`, until `stop`) on `rt`,
/// and beside it a task that, once the loop has made [`WARM_UP`] refusals, sleeps 10 ms: the sleep
/// must end within [`BOUND`].
fn a_timer_fires_beside<F, Fut, T>(rt: Runtime, call: F, refused: fn(&T) -> bool)
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = T> + Send,
    T: Send + 'static,
{
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let (warm_tx, warm_rx) = tokio::sync::oneshot::channel::<()>();
    let (slept_tx, slept_rx) = mpsc::channel();
    let runner = {
        let (stop, count) = (stop.clone(), count.clone());
        std::thread::spawn(move || {
            let looping = rt.spawn(async move {
                let mut warm_tx = Some(warm_tx);
                while !stop.load(Ordering::Relaxed) {
                    // No other await in this loop: only the calls can make it yield.
                    let outcome = call().await;
                    assert!(refused(&outcome), "a call was not refused");
                    if count.fetch_add(1, Ordering::Relaxed) + 1 == WARM_UP {
                        let _ = warm_tx.take().unwrap().send(());
                    }
                }
            });
            rt.block_on(async {
                warm_rx.await.unwrap();
                tokio::time::sleep(Duration::from_millis(10)).await;
                let _ = slept_tx.send(());
                looping.await.unwrap();
            });
        })
    };
    let slept = slept_rx.recv_timeout(BOUND).is_ok();
    stop.store(true, Ordering::Relaxed);
    runner.join().unwrap();
    assert!(
        slept,
        "a 10 ms sleep did not end within {BOUND:?} beside a loop of refused calls \
         ({} refusals made)",
        count.load(Ordering::Relaxed)
    );
}

fn is_refused<T>(outcome: &Result<T, BoxError>) -> bool {
    matches!(outcome, Err(error) if Rejected::find_in(&**error).is_some())
}

/// One set of attribute sites per test, so that the tests share no state.
macro_rules! sites {
    ($module:ident) => {
        mod $module {
            use super::*;

            #[breaker(error_threshold = 1, error_timeout = "1h")]
            pub async fn open() -> Result<(), BoxError> {
                Err("down".into())
            }

            #[too_busy(max_in_flight = 1)]
            pub async fn busy(hold: bool) -> Result<(), BoxError> {
                if hold {
                    std::future::pending::<()>().await;
                }
                Ok(())
            }
        }
    };
}

sites!(mt);
sites!(ct);

type Called<T> = std::pin::Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send>>;

fn breaker_loop(rt: Runtime, open: fn() -> Called<()>) {
    let _ = rt.block_on(open()); // opens it
    a_timer_fires_beside(rt, open, is_refused);
}

#[test]
fn refused_breaker_calls_let_a_timer_fire_on_a_multi_thread_runtime() {
    breaker_loop(one_worker(), || Box::pin(mt::open()));
}

#[test]
fn refused_breaker_calls_let_a_timer_fire_on_a_current_thread_runtime() {
    breaker_loop(current_thread(), || Box::pin(ct::open()));
}

/// Holds one call of `busy` in flight (its `max_in_flight` slot) for as long as the loop runs.
fn busy_loop<Fut>(rt: Runtime, busy: fn(bool) -> Fut)
where
    Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
{
    // Admitted here, then kept by a task (a holding call spawned first could find the slot
    // taken by a call of this thread, and be refused).
    let mut holding = Box::pin(busy(true));
    rt.block_on(async { assert!(support::poll_once(holding.as_mut()).await.is_pending()) });
    let held = rt.spawn(holding);
    assert!(is_refused(&rt.block_on(busy(false))));
    // The holding call stays in flight: it is never dropped while the loop runs.
    a_timer_fires_beside(rt, move || busy(false), is_refused);
    drop(held);
}

#[test]
fn too_busy_refusals_let_a_timer_fire_on_a_multi_thread_runtime() {
    busy_loop(one_worker(), mt::busy);
}

#[test]
fn too_busy_refusals_let_a_timer_fire_on_a_current_thread_runtime() {
    busy_loop(current_thread(), ct::busy);
}

/// Two clients hammer an open breaker with calls that, once admitted, wait for their answer (a
/// timer). It half-opens after `error_timeout`; one of them takes the probe slot, and the other
/// is refused (probes busy) for as long as the probe runs: the probe's answer must come, and
/// the breaker close, within the bound.
#[test]
fn a_probe_admitted_while_a_loop_hammers_the_breaker_completes() {
    let rt = one_worker();
    let breaker = Arc::new(
        Breaker::builder("refusals_yield.half_open")
            .error_threshold(1)
            .error_timeout(Duration::from_millis(50))
            .build()
            .unwrap(),
    );
    let _ = rt.block_on(breaker.call(async { Err::<(), BoxError>("down".into()) }));
    assert_eq!(breaker.state(), breaker::State::Open);
    let stop = Arc::new(AtomicBool::new(false));
    let hammer = |breaker: Arc<Breaker>, stop: Arc<AtomicBool>| async move {
        while !stop.load(Ordering::Relaxed) {
            let _ = breaker
                .call(async {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    Ok::<(), BoxError>(())
                })
                .await;
        }
    };
    let a = rt.spawn(hammer(breaker.clone(), stop.clone()));
    let b = rt.spawn(hammer(breaker.clone(), stop.clone()));
    let started = std::time::Instant::now();
    while breaker.state() != breaker::State::Closed && started.elapsed() < BOUND {
        std::thread::sleep(Duration::from_millis(5));
    }
    let state = breaker.state();
    stop.store(true, Ordering::Relaxed);
    rt.block_on(async {
        a.await.unwrap();
        b.await.unwrap();
    });
    assert_eq!(
        state,
        breaker::State::Closed,
        "the probe did not complete within {BOUND:?} while a loop hammered the breaker"
    );
}

#[cfg(feature = "tower")]
mod layers {
    use super::*;
    use resiliency::too_busy::TooBusy;
    use resiliency::tower::{BreakerLayer, TooBusyLayer};
    use tower::{service_fn, Service, ServiceBuilder, ServiceExt};

    type Svc = tower::util::BoxCloneSyncService<u32, u32, BoxError>;

    fn refusing_breaker(name: &'static str) -> Svc {
        let svc = ServiceBuilder::new()
            .layer(BreakerLayer::new(Breaker::builder(name)).unwrap())
            .service(service_fn(|n: u32| async move { Ok::<_, BoxError>(n) }));
        resiliency::breaker::get(name).unwrap().force_open();
        tower::util::BoxCloneSyncService::new(svc)
    }

    fn refusing_guard(rt: &Runtime, name: &'static str) -> Svc {
        let svc = ServiceBuilder::new()
            .layer(TooBusyLayer::new(TooBusy::builder(name).max_in_flight(1)).unwrap())
            .service(service_fn(|n: u32| async move {
                if n == 0 {
                    std::future::pending::<()>().await;
                }
                Ok::<_, BoxError>(n)
            }));
        let svc = tower::util::BoxCloneSyncService::new(svc);
        // One request held in flight for good (admitted here, then kept by a task): every other
        // is refused.
        let mut held = Box::pin(svc.clone().oneshot(0));
        rt.block_on(async { assert!(support::poll_once(held.as_mut()).await.is_pending()) });
        rt.spawn(async move {
            let _ = held.await;
        });
        assert!(is_refused(&rt.block_on(svc.clone().oneshot(1))));
        svc
    }

    fn call(svc: &Svc) -> impl Fn() -> Called<u32> {
        let svc = svc.clone();
        move || {
            let mut svc = svc.clone();
            Box::pin(async move { svc.ready().await?.call(1).await })
        }
    }

    #[test]
    fn breaker_layer_refusals_let_a_timer_fire() {
        let svc = refusing_breaker("refusals_yield.layer.mt");
        a_timer_fires_beside(one_worker(), call(&svc), is_refused);
        let svc = refusing_breaker("refusals_yield.layer.ct");
        a_timer_fires_beside(current_thread(), call(&svc), is_refused);
    }

    #[test]
    fn too_busy_layer_refusals_let_a_timer_fire() {
        let rt = one_worker();
        let svc = refusing_guard(&rt, "refusals_yield.busy_layer.mt");
        a_timer_fires_beside(rt, call(&svc), is_refused);
        let rt = current_thread();
        let svc = refusing_guard(&rt, "refusals_yield.busy_layer.ct");
        a_timer_fires_beside(rt, call(&svc), is_refused);
    }
}

/// Outside any tokio runtime (another executor), a refusal is ready at once, every time: there is
/// no budget to take from.
#[test]
fn off_tokio_refusals_are_ready_at_once() {
    let breaker = Breaker::builder("refusals_yield.off_tokio")
        .build()
        .unwrap();
    breaker.force_open();
    support::block_on_without_tokio(async {
        for _ in 0..10_000 {
            let call = std::pin::pin!(breaker.call(async { Ok::<(), Rejected>(()) }));
            match support::poll_once(call).await {
                std::task::Poll::Ready(Err(rejected)) => assert!(rejected.is_circuit_open()),
                other => panic!("not refused at once: {:?}", other.is_ready()),
            }
        }
    });
}
