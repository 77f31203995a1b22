use std::time::Duration;

use resiliency::race_retry::RaceRetry;
use resiliency::tower::RaceRetryLayer;
use tower::{service_fn, Layer, Service};

/// A request that cannot be cloned: the race layer cannot give each attempt its own.
struct Upload(Vec<u8>);

fn main() {
    let layer = RaceRetryLayer::new(RaceRetry::builder("ui").total(Duration::from_secs(1))).unwrap();
    let mut svc = layer.layer(service_fn(|upload: Upload| async move {
        Ok::<usize, std::io::Error>(upload.0.len())
    }));
    let _ = Service::call(&mut svc, Upload(vec![1, 2, 3]));
}
