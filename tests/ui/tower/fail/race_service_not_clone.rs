use std::future::Ready;
use std::task::{Context, Poll};
use std::time::Duration;

use resiliency::race_retry::RaceRetry;
use resiliency::tower::RaceRetryLayer;
use tower::{Layer, Service};

/// A service that cannot be cloned: the race layer cannot give each attempt its own.
struct Pool;

impl Service<u32> for Pool {
    type Response = u32;
    type Error = std::io::Error;
    type Future = Ready<Result<u32, std::io::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, id: u32) -> Self::Future {
        std::future::ready(Ok(id))
    }
}

fn main() {
    let layer = RaceRetryLayer::new(RaceRetry::builder("ui").total(Duration::from_secs(1))).unwrap();
    let mut svc = layer.layer(Pool);
    let _ = Service::call(&mut svc, 7);
}
