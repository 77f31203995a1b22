//! The compile tests of `resiliency` (see `ui.rs` and `readme.rs`); this library holds nothing.
