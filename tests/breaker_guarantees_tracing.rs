//! A `tracing` layer that panics on a breaker's `open -> half-open` event takes no probe slot: the
//! change stands and the probe runs. Its own test binary, with a single test: `tracing` caches
//! whether a callsite is enabled process-wide, so a subscriber set for one thread sees events
//! reliably only while no other test's thread hits the same callsites.

mod support;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use resiliency::breaker::State;
use resiliency::Breaker;

use support::BoxError;

#[test]
fn a_tracing_layer_that_panics_on_half_open_takes_no_probe_slot() {
    // Panics on the first `open -> half-open` event.
    let layer = Arc::new(support::PanickingSubscriber::new(|event, before| {
        before == 0 && support::message(event).contains("half-open")
    }));
    let _default = tracing::subscriber::set_default(layer.clone());
    let rt = support::paused_runtime();
    rt.block_on(async {
        let b = Breaker::builder("guarantees.tracing_layer")
            .error_threshold(1)
            .error_timeout(Duration::from_millis(20))
            .build()
            .unwrap();
        let failed = b.call(async { Err::<(), BoxError>("down".into()) }).await;
        assert!(failed.is_err());
        assert_eq!(b.state(), State::Open);
        tokio::time::sleep(Duration::from_millis(22)).await;
        // The call that becomes the probe announces the change; the layer panics on it.
        let probe = b.call(async { Ok::<_, BoxError>(7) }).await;
        assert_eq!(probe.unwrap(), 7, "the probe ran");
        assert_eq!(
            layer.picked.load(Ordering::SeqCst),
            1,
            "the layer saw the change"
        );
        assert_eq!(b.state(), State::Closed);
    });
}
