//! The retry budget shared by every call of one function (Finagle's idea): each call deposits
//! `share` of a token, each extra attempt takes a whole one, so extra attempts add at most `share`
//! of the load however many calls fail. A small floor (`FLOOR_PER_SEC` extra attempts per
//! second) lets a function called rarely still race. At most `MAX_BANKED` tokens are kept, so a
//! long quiet spell cannot pay for a burst of retries in an outage.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Milli-tokens per token.
const TOKEN: i64 = 1000;
/// Tokens kept at most.
const MAX_BANKED: i64 = 100;
/// Extra attempts per second allowed whatever the balance.
pub(crate) const FLOOR_PER_SEC: u64 = 10;
/// The floor's bucket holds at most this many milli-tokens (one second's worth).
const FLOOR_CAP: u64 = FLOOR_PER_SEC * TOKEN as u64;
const FLOOR_BITS: u32 = 20;

#[derive(Debug)]
pub(crate) struct Budget {
    /// Milli-tokens deposited per call (`share * 1000`); 0 without a budget.
    deposit: i64,
    balance: AtomicI64,
    /// The floor's bucket: `(ms of the last refill) << FLOOR_BITS | milli-tokens`.
    floor: AtomicU64,
}

impl Budget {
    pub(crate) const fn new(share: Option<f64>) -> Self {
        let deposit = match share {
            Some(share) => (share * TOKEN as f64) as i64,
            None => 0,
        };
        Budget {
            deposit,
            balance: AtomicI64::new(0),
            floor: AtomicU64::new(FLOOR_CAP),
        }
    }

    /// A call's deposit.
    #[inline]
    pub(crate) fn deposit(&self) {
        if self.deposit > 0 && self.balance.load(Relaxed) < MAX_BANKED * TOKEN {
            self.balance.fetch_add(self.deposit, Relaxed);
        }
    }

    /// Takes a token for an extra attempt, `now` being the time since the policy's first call.
    pub(crate) fn withdraw(&self, now: Duration) -> bool {
        if self.deposit == 0 {
            return true;
        }
        let mut balance = self.balance.load(Relaxed);
        while balance >= TOKEN {
            match self
                .balance
                .compare_exchange_weak(balance, balance - TOKEN, Relaxed, Relaxed)
            {
                Ok(_) => return true,
                Err(seen) => balance = seen,
            }
        }
        self.withdraw_floor(now.as_millis().min((1u128 << 44) - 1) as u64)
    }

    fn withdraw_floor(&self, now_ms: u64) -> bool {
        let mut word = self.floor.load(Relaxed);
        loop {
            let (at, tokens) = (word >> FLOOR_BITS, word & ((1 << FLOOR_BITS) - 1));
            let refill = now_ms.saturating_sub(at) * FLOOR_PER_SEC; // milli-tokens per ms
            let tokens = (tokens + refill).min(FLOOR_CAP);
            if tokens < TOKEN as u64 {
                return false;
            }
            let next = (now_ms.max(at) << FLOOR_BITS) | (tokens - TOKEN as u64);
            match self
                .floor
                .compare_exchange_weak(word, next, Relaxed, Relaxed)
            {
                Ok(_) => return true,
                Err(seen) => word = seen,
            }
        }
    }

    /// Whole tokens banked now.
    pub(crate) fn balance(&self) -> f64 {
        self.balance.load(Relaxed) as f64 / TOKEN as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_attempts_are_paid_by_deposits() {
        let b = Budget::new(Some(0.1));
        let t = Duration::from_secs(100);
        // Drain the floor first.
        while b.withdraw(t) {}
        for _ in 0..10 {
            b.deposit();
        }
        assert!(b.withdraw(t), "ten calls at 10% pay for one extra attempt");
        assert!(!b.withdraw(t));
    }

    #[test]
    fn the_floor_allows_a_few_per_second() {
        let b = Budget::new(Some(0.1));
        let mut granted = 0;
        for ms in 0..10_000u64 {
            if b.withdraw(Duration::from_millis(ms)) {
                granted += 1;
            }
        }
        // One second's worth to start with, then 10 per second for 10 s.
        assert!((100..=111).contains(&granted), "{granted}");
    }

    #[test]
    fn the_bank_is_bounded() {
        let b = Budget::new(Some(1.0));
        for _ in 0..1_000 {
            b.deposit();
        }
        assert!(b.balance() <= (MAX_BANKED + 1) as f64);
    }

    #[test]
    fn no_budget_never_refuses() {
        let b = Budget::new(None);
        assert!((0..1000).all(|_| b.withdraw(Duration::ZERO)));
    }
}
