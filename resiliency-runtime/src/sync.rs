//! The atomics of the breaker's state word, swapped for loom's under `--cfg resiliency_loom` so
//! that the loom models (`breaker/loom.rs`) explore every interleaving of them.

#[cfg(resiliency_loom)]
pub(crate) use loom::sync::atomic::AtomicU64;
#[cfg(not(resiliency_loom))]
pub(crate) use std::sync::atomic::AtomicU64;
