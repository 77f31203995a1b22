#![cfg(feature = "metrics")]
