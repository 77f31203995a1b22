//! The atomics of the lock-free state words, swapped for loom's under `--cfg resilient_loom` so
//! that the loom models (`breaker/loom.rs`, `busy/loom.rs`) explore every interleaving of them.

#[cfg(resilient_loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64};
#[cfg(not(resilient_loom))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64};
