//! `#[too_busy]` on an `async fn` whose guard admits the call holding nothing (the lag signal
//! alone, the lag below `max_lag`): the body runs as it is, with nothing to give back or record.
//! These tests hold that path to the guarantees of every other call (a panic reaches the caller
//! and leaves the guard as it was) and check that a setting that names another signal takes the
//! site off it at once, and back when unset.
#![allow(clippy::await_holding_lock)]

use std::pin::pin;

use resiliency::settings::{self, Policy};
use resiliency::{too_busy, Rejected, RejectedKind};
use tokio::sync::oneshot;

use crate::support;
use support::{poll_once, serial};

#[too_busy]
async fn lag_only(panic: bool) -> Result<u32, Rejected> {
    if panic {
        explode();
    }
    Ok(7)
}

fn explode() {
    panic!("the body panics")
}

/// A body that panics on the lag-only path: the caller sees its panic, and the next call runs.
#[tokio::test]
async fn a_panic_on_the_lag_only_path_reaches_the_caller_and_leaves_the_guard_as_it_was() {
    let payload = tokio::spawn(lag_only(true)).await.unwrap_err().into_panic();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"the body panics"));
    assert_eq!(lag_only(false).await.unwrap(), 7);
}

#[too_busy]
async fn held_open(release: oneshot::Receiver<()>) -> Result<u32, Rejected> {
    release.await.ok();
    Ok(7)
}

/// `max_in_flight` set at run time takes the site off the lag-only path: a second call in flight
/// is refused; unset, both run.
#[tokio::test]
async fn a_setting_that_names_another_signal_takes_the_site_off_the_lag_only_path() {
    let _serial = serial();
    let site = "suite::too_busy_free::held_open";
    let (tx, rx) = oneshot::channel();
    // The first call sets the site up.
    drop(tx);
    assert_eq!(held_open(rx).await.unwrap(), 7);

    settings::set(Policy::TooBusy, site, "max_in_flight", "1").unwrap();
    let (tx, rx) = oneshot::channel();
    let mut first = pin!(held_open(rx));
    assert!(
        poll_once(first.as_mut()).await.is_pending(),
        "holds the one slot"
    );
    let (_tx2, rx2) = oneshot::channel();
    let refused = held_open(rx2).await.unwrap_err();
    assert_eq!(refused.kind(), RejectedKind::TooBusy);
    tx.send(()).unwrap();
    assert_eq!(first.await.unwrap(), 7);

    settings::unset(Policy::TooBusy, site, "max_in_flight").unwrap();
    let (tx, rx) = oneshot::channel();
    let mut first = pin!(held_open(rx));
    assert!(poll_once(first.as_mut()).await.is_pending());
    let (tx2, rx2) = oneshot::channel();
    drop(tx2);
    assert_eq!(held_open(rx2).await.unwrap(), 7, "no limit: both run");
    tx.send(()).unwrap();
    assert_eq!(first.await.unwrap(), 7);
}
