//! Unit tests of `Rejected`: its size, its signals, and how its durations read.

use super::display::Rounded;
use std::time::Duration;

#[test]
fn a_rejected_is_one_pointer() {
    assert_eq!(
        std::mem::size_of::<super::Rejected>(),
        std::mem::size_of::<usize>()
    );
}

#[test]
fn every_busy_signal_is_readable() {
    use super::{BusySignal, Reason, Rejected, Signal};
    let ms = Duration::from_millis;
    let cases = [
        (
            BusySignal::Lag {
                lag: ms(90),
                max_lag: ms(70),
            },
            Signal::Lag,
        ),
        (
            BusySignal::InFlight {
                limit: 4,
                auto: true,
            },
            Signal::InFlight,
        ),
        (
            BusySignal::Latency {
                mean: ms(300),
                max_latency: ms(200),
            },
            Signal::Latency,
        ),
    ];
    for (signal, public) in cases {
        let rejected = Rejected::new(Reason::TooBusy {
            name: "handler",
            signal,
        });
        assert!(rejected.is_too_busy());
        assert_eq!(rejected.busy_signal(), Some(public));
    }
}

#[test]
fn rounded_durations() {
    let r = |d| Rounded(d).to_string();
    assert_eq!(r(Duration::from_nanos(799_873_814)), "799ms");
    assert_eq!(r(Duration::from_secs(2)), "2s");
    assert_eq!(r(Duration::from_millis(1500)), "1.5s");
    assert_eq!(r(Duration::from_nanos(4_998_203_188)), "5s");
    assert_eq!(r(Duration::from_millis(4_991)), "4.99s");
    assert_eq!(r(Duration::from_secs(180)), "180s");
    assert_eq!(r(Duration::from_micros(250)), "250us");
    assert_eq!(r(Duration::from_nanos(7)), "7ns");
}
