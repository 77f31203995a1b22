//! The monitor's unit tests: its looks at an overdue timer, the cap on samples, and monitors
//! that runtimes come and go with.

use super::*;
use crate::too_busy::Smoothing;

/// A running monitor (lag 0) and a thread's view of it.
fn monitor() -> (&'static Monitor, Local) {
    let m: &'static Monitor = Box::leak(Box::new(Monitor::new()));
    let local = Local::new();
    local.set(m, m.restart());
    (m, local)
}

fn arm_in(m: &Monitor, after: Duration) {
    m.arm(Instant::now() + after, wall_ns() + nanos(after));
}

/// The lag one stall of `stall` reads as, from a quiet runtime, with the cap in force.
fn one_stall(stall: Duration) -> Duration {
    let ms = Duration::from_millis;
    Smoothing::default().sampled(Duration::ZERO, ms(1), stall, None, ms(10), cap_basis())
}

/// Samples are capped at twice the `max_lag` in force: a guard's `max_lag` raised to 10 s
/// and set back to 70 ms leaves the cap where 70 ms puts it, so that one 300 ms stall reads
/// as one sample capped at 140 ms (47 ms of lag, nothing refused), not as 100 ms (43% of
/// calls refused). Guards of other tests of this crate check at most the default 70 ms.
#[test]
fn the_sample_cap_follows_the_max_lag_in_force_both_ways() {
    use crate::settings::{self, Policy};
    use crate::too_busy::TooBusy;
    use crate::Rejected;

    let ms = Duration::from_millis;
    let site = "busy.monitor.cap_follows";
    let guard = TooBusy::builder(site).max_lag(ms(70)).register().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let call = || runtime.block_on(guard.call(async { Ok::<_, Rejected>(()) }));
    call().unwrap();
    assert_eq!(one_stall(ms(300)).as_micros(), 46_666);

    settings::set(Policy::TooBusy, site, "max_lag", "10s").unwrap();
    call().unwrap();
    assert!(cap_basis() >= Duration::from_secs(10), "{:?}", cap_basis());
    assert!(
        one_stall(ms(300)) > ms(99),
        "raised: the stall is not capped"
    );

    settings::set(Policy::TooBusy, site, "max_lag", "70ms").unwrap();
    call().unwrap();
    let lag = one_stall(ms(300));
    assert_eq!(lag.as_micros(), 46_666, "lowered: the cap is 140 ms again");
    assert_eq!(super::super::rules::shed_probability(lag, ms(70)), 0.0);

    settings::unset(Policy::TooBusy, site, "max_lag").unwrap();
}

#[test]
fn frequent_calls_on_a_quiet_runtime_are_looked_at_every_64th_call() {
    let (m, local) = monitor();
    arm_in(m, Duration::from_secs(60));
    assert_eq!(m.look(&local, 0), 0);
    // Two looks in quick succession: calls come far faster than one per `LOOK_SPACING`.
    assert_eq!(m.look(&local, 0), 0);
    assert_eq!(local.calls.get(), LOOK_EVERY);
}

#[test]
fn seldom_calls_are_looked_at_every_time() {
    let (m, local) = monitor();
    arm_in(m, Duration::from_secs(60));
    for _ in 0..2 {
        std::thread::sleep(LOOK_SPACING * 2);
        m.look(&local, 0);
        assert_eq!(local.calls.get(), 1);
    }
}

#[test]
fn a_lagging_runtime_is_looked_at_every_call() {
    // The probe's lag is past a sixteenth of max_lag, its timer not yet due.
    let (m, local) = monitor();
    arm_in(m, Duration::from_secs(60));
    m.look(&local, 0);
    let lag = MAX_LAG_NS.load(Relaxed) / LAGGING_SHARE;
    assert_eq!(m.look(&local, lag), lag);
    assert_eq!(local.calls.get(), 1);

    // Its timer overdue by more than an interval: the lag rises, and every call looks.
    let (m, local) = monitor();
    arm_in(m, Duration::ZERO);
    m.look(&local, 0);
    std::thread::sleep(interval() * 2);
    assert!(m.look(&local, 0) > 0);
    assert_eq!(local.calls.get(), 1);
}

#[test]
fn a_timer_overdue_on_tokios_clock_only_is_not_overdue() {
    // Due 1 s ago on tokio's clock (as after `advance`), not yet on the wall clock.
    let (m, local) = monitor();
    let now = Instant::now();
    let second_ago = now.checked_sub(Duration::from_secs(1)).unwrap_or(now);
    m.arm(second_ago, wall_ns() + nanos(Duration::from_secs(60)));
    m.look(&local, 0);
    std::thread::sleep(interval() * 2);
    assert_eq!(m.look(&local, 0), 0);
    assert_eq!(m.first_seen_ns.load(Relaxed), NONE);
}

#[test]
fn runtimes_that_come_and_go_reuse_retired_monitors() {
    let runtimes = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    };
    let before = slots().len();
    for _ in 0..50 {
        let runtime = runtimes();
        runtime.block_on(async {
            assert!(current_lag_ns().is_some());
            tokio::task::yield_now().await; // the monitor task runs
        });
    }
    // Threads that come and go on one runtime share its monitor.
    let shared = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    for _ in 0..100 {
        let handle = shared.handle().clone();
        std::thread::spawn(move || handle.block_on(async { current_lag_ns() }))
            .join()
            .unwrap();
    }
    assert!(slots().len() <= before + 3, "{} monitors", slots().len());
    drop(shared);
    // Two at once, each with its own monitor.
    let (a, b) = (runtimes(), runtimes());
    let a_monitor = a.block_on(async {
        current_lag_ns();
        LOCAL.with(|local| local.monitor.get().map(|m| m as *const Monitor as usize))
    });
    let b_monitor = std::thread::spawn(move || {
        b.block_on(async {
            current_lag_ns();
            LOCAL.with(|local| local.monitor.get().map(|m| m as *const Monitor as usize))
        })
    })
    .join()
    .unwrap();
    assert_ne!(a_monitor, b_monitor);
    // Other tests of this crate may hold a monitor or two meanwhile.
    assert!(slots().len() <= before + 4, "{} monitors", slots().len());
}
