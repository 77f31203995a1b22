//! The retry budget shared by every call of one function (Finagle's idea): each call deposits
//! `share` of a token, each extra attempt takes a whole one, so extra attempts add at most `share`
//! of the load however many calls fail. At most `MAX_BANKED` tokens are kept, so a long quiet
//! spell cannot pay for a flood of retries in an outage.
//!
//! A floor lets a function called rarely still race: while the deposits come slower than
//! `FLOOR_PER_SEC` tokens a second, a second bucket makes up the difference (in bursts of at most
//! `FLOOR_PER_SEC`). A function whose deposits reach the floor's rate gets nothing from it, so
//! the share is a true bound there.
//!
//! Deposits are batched per thread (`BATCH` calls, or until the thread calls another raced
//! function or takes a token; counted as calls, at the share in force when they are written), so
//! that calls on many threads do not all write one shared counter:
//! a thread's withdrawal sees its own deposits at once, other threads' after at most `BATCH` of
//! their calls (under a token and a half each at a 10% share), which only makes the bound tighter
//! (as do the pending deposits of a thread that ends, which are lost). They are written to the
//! thread's own stripe of the counter (`crate::thread_number`), each on a cache line of its own,
//! made at the first write: threads that write them write no line another thread writes, nor the
//! one holding the policy's settings that every call reads; a withdrawal sums the stripes.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::Duration;

use crate::stripes::Striped;

/// Milli-tokens per token.
const TOKEN: u64 = 1000;
/// Tokens kept at most.
pub(crate) const MAX_BANKED: u64 = 100;
/// The floor: extra attempts per second allowed to a function whose deposits come slower.
pub(crate) const FLOOR_PER_SEC: u64 = 10;
/// The floor's bucket holds at most this many milli-tokens (one second's worth).
const FLOOR_CAP: u64 = FLOOR_PER_SEC * TOKEN;
const FLOOR_BITS: u32 = 20;
/// Calls whose deposits a thread adds up before it writes them to the shared counter.
const BATCH: u32 = 16;

thread_local! {
    /// This thread's deposits not yet written: the budget they are for, and how many calls
    /// made them (a call's deposit is one word written, the count; the share is read when they
    /// are written).
    static PENDING_FOR: Cell<Option<&'static Budget>> = const { Cell::new(None) };
    static PENDING: Cell<u32> = const { Cell::new(0) };
}

#[derive(Debug)]
pub(crate) struct Budget {
    /// Milli-tokens deposited per call (`share * 1000`); 0 without a budget.
    deposit: AtomicU64,
    /// Milli-tokens deposited so far, by stripe (a thread writes the one of its number); each
    /// only grows, so their sum does. Made at the first write.
    deposited: OnceLock<Striped>,
    /// Milli-tokens withdrawn so far, or written off above the bank's cap.
    spent: AtomicU64,
    /// The floor's bucket: `(ms of the last refill) << FLOOR_BITS | milli-tokens`.
    floor: AtomicU64,
    /// `deposited` at the floor's last refill: deposits since then shrink its refill.
    floor_seen: AtomicU64,
}

impl Budget {
    pub(crate) const fn new(share: Option<f64>) -> Self {
        Budget {
            deposit: AtomicU64::new(deposit_of(share)),
            deposited: OnceLock::new(),
            spent: AtomicU64::new(0),
            floor: AtomicU64::new(FLOOR_CAP),
            floor_seen: AtomicU64::new(0),
        }
    }

    /// A call's deposit (batched per thread, see the module's docs).
    /// Changes the share, keeping the tokens banked.
    pub(crate) fn set_share(&self, share: Option<f64>) {
        self.deposit.store(deposit_of(share), Relaxed);
    }

    #[inline]
    pub(crate) fn deposit(&'static self) {
        if self.deposit.load(Relaxed) == 0 {
            return;
        }
        let mine =
            PENDING_FOR.try_with(|pending| pending.get().is_some_and(|b| std::ptr::eq(b, self)));
        match PENDING.try_with(|calls| (mine == Ok(true)).then(|| calls.replace(calls.get() + 1))) {
            Ok(Some(calls)) if calls + 1 < BATCH => {}
            // A full batch, or the first deposit for this budget: written now.
            _ => self.write_pending(),
        }
    }

    /// Writes this thread's pending deposits: a full batch of this budget's, this call's
    /// included; or another budget's, this one's becoming the pending ones (this call's first).
    #[inline(never)]
    fn write_pending(&'static self) {
        let before = PENDING_FOR.try_with(|pending| pending.replace(Some(self)));
        let calls = PENDING.try_with(|calls| calls.replace(0)).unwrap_or(0);
        match before {
            Ok(Some(budget)) if std::ptr::eq(budget, self) => self.add(calls),
            Ok(other) => {
                if let Some(other) = other {
                    other.add(calls);
                }
                let _ = PENDING.try_with(|calls| calls.set(1));
            }
            // No thread-locals (a destructor at the thread's exit): written at once.
            Err(_) => self.add(1),
        }
    }

    /// Adds the deposits of `calls` calls.
    fn add(&self, calls: u32) {
        let milli = u64::from(calls) * self.deposit.load(Relaxed);
        if milli > 0 {
            self.deposited.get_or_init(Striped::new).add(milli);
        }
    }

    /// Milli-tokens deposited so far: the sum of the stripes, never smaller on a later read.
    fn deposited(&self) -> u64 {
        self.deposited.get().map_or(0, Striped::total)
    }

    /// Writes this thread's pending deposits to this budget, if they are for it.
    fn flush(&'static self) {
        let mine =
            PENDING_FOR.try_with(|pending| pending.get().is_some_and(|b| std::ptr::eq(b, self)));
        if mine == Ok(true) {
            let calls = PENDING.try_with(|calls| calls.replace(0)).unwrap_or(0);
            self.add(calls);
        }
    }

    /// Takes a token for an extra attempt, `now` being the time since the floor's time base.
    pub(crate) fn withdraw(&'static self, now: Duration) -> bool {
        if self.deposit.load(Relaxed) == 0 {
            return true;
        }
        self.flush();
        let mut spent = self.spent.load(Relaxed);
        loop {
            let deposited = self.deposited();
            // Above the cap, the excess is written off first.
            let floor = deposited.saturating_sub(MAX_BANKED * TOKEN);
            let base = spent.max(floor);
            if deposited.saturating_sub(base) < TOKEN {
                break;
            }
            match self
                .spent
                .compare_exchange_weak(spent, base + TOKEN, Relaxed, Relaxed)
            {
                Ok(_) => return true,
                Err(seen) => spent = seen,
            }
        }
        self.withdraw_floor(now.as_millis().min((1u128 << 44) - 1) as u64)
    }

    fn withdraw_floor(&self, now_ms: u64) -> bool {
        let deposited = self.deposited();
        let seen = self.floor_seen.swap(deposited, Relaxed);
        let mut word = self.floor.load(Relaxed);
        loop {
            let (at, tokens) = (word >> FLOOR_BITS, word & ((1 << FLOOR_BITS) - 1));
            // The floor's rate (milli-tokens per ms), less what deposits brought meanwhile.
            let refill = (now_ms.saturating_sub(at) * FLOOR_PER_SEC)
                .saturating_sub(deposited.saturating_sub(seen));
            let tokens = (tokens + refill).min(FLOOR_CAP);
            let granted = tokens >= TOKEN;
            let left = if granted { tokens - TOKEN } else { tokens };
            let next = (now_ms.max(at) << FLOOR_BITS) | left;
            match self
                .floor
                .compare_exchange_weak(word, next, Relaxed, Relaxed)
            {
                Ok(_) => return granted,
                Err(current) => word = current,
            }
        }
    }

    /// The share deposited per call, or `None` without a budget.
    pub(crate) fn share(&self) -> Option<f64> {
        let deposit = self.deposit.load(Relaxed);
        (deposit > 0).then(|| deposit as f64 / TOKEN as f64)
    }

    /// Whole tokens banked now.
    pub(crate) fn balance(&self) -> f64 {
        let deposited = self.deposited();
        let base = self
            .spent
            .load(Relaxed)
            .max(deposited.saturating_sub(MAX_BANKED * TOKEN));
        deposited.saturating_sub(base) as f64 / TOKEN as f64
    }
}

/// Milli-tokens per call for `share`: at least one with a budget, 0 without.
const fn deposit_of(share: Option<f64>) -> u64 {
    match share {
        Some(share) => {
            let deposit = (share * TOKEN as f64) as u64;
            if deposit == 0 {
                1
            } else {
                deposit
            }
        }
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leak(budget: Budget) -> &'static Budget {
        Box::leak(Box::new(budget))
    }

    #[test]
    fn deposits_are_batched_per_thread_and_seen_by_its_own_withdrawals() {
        let b = leak(Budget::new(Some(0.1)));
        let other = leak(Budget::new(Some(0.1)));
        let t = Duration::from_secs(100);
        while b.withdraw(t) {}
        for _ in 0..5 {
            b.deposit();
        }
        // Not written yet: pending on this thread.
        assert_eq!(b.deposited(), 0);
        // A call of another budget writes them.
        other.deposit();
        assert_eq!(b.deposited(), 500);
        for _ in 0..BATCH {
            b.deposit();
        }
        // A full batch is written at once.
        assert_eq!(b.deposited(), 500 + 1000 * BATCH as u64 / 10);
        // Ten pending deposits pay for a withdrawal on this thread.
        for _ in 0..10 {
            b.deposit();
        }
        assert!(b.withdraw(t));
        // Another thread's pending deposits are not seen until they are written.
        let before = other.deposited();
        std::thread::spawn(move || {
            for _ in 0..10 {
                other.deposit();
            }
        })
        .join()
        .unwrap();
        assert_eq!(other.deposited(), before);
    }

    #[test]
    fn threads_write_their_own_stripes_and_a_withdrawal_sums_them() {
        let b = leak(Budget::new(Some(0.1)));
        let t = Duration::from_secs(100);
        while b.withdraw(t) {}
        // Two threads alive at once have two numbers, so (but where the stripes' mask folds them
        // together) two stripes; each makes a full batch.
        let mask = Striped::new().stripes().count() - 1;
        let barrier = std::sync::Barrier::new(2);
        let numbers: Vec<usize> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    scope.spawn(|| {
                        let number = crate::thread_number::this_thread();
                        barrier.wait(); // both alive, both numbered
                        (0..BATCH).for_each(|_| b.deposit());
                        number
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert_ne!(numbers[0], numbers[1], "two live threads, two numbers");
        let stripes = b.deposited.get().expect("made at the first write");
        let used = stripes.stripes().filter(|&s| s > 0).count();
        let distinct = if numbers[0] & mask == numbers[1] & mask {
            1
        } else {
            2
        };
        assert_eq!(used, distinct, "each thread wrote its own stripe");
        // 16 deposits of a tenth per thread, summed by a withdrawal on this one.
        let tokens = 2 * BATCH as usize / 10;
        assert_eq!(b.deposited(), 100 * BATCH as u64 * 2);
        assert_eq!((0..=tokens).filter(|_| b.withdraw(t)).count(), tokens);
    }

    #[test]
    fn extra_attempts_are_paid_by_deposits() {
        let b = leak(Budget::new(Some(0.1)));
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
    fn the_floor_allows_ten_per_second_to_a_rare_caller() {
        let b = leak(Budget::new(Some(0.1)));
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
    fn the_floor_adds_nothing_once_deposits_reach_its_rate() {
        let b = leak(Budget::new(Some(0.1)));
        // 1,500 calls per second, each wanting two extra attempts, for 10 s: deposits bring 150
        // tokens a second, above the floor's 10, so only the share (and the first burst) passes.
        let mut granted = 0;
        for ms in 0..10_000u64 {
            b.deposit();
            if ms % 2 == 0 {
                b.deposit();
            }
            for _ in 0..2 {
                if b.withdraw(Duration::from_millis(ms)) {
                    granted += 1;
                }
            }
        }
        // 15,000 calls x 0.1 = 1,500 tokens, plus the floor's first burst of 10.
        assert!((1500..=1511).contains(&granted), "{granted}");
    }

    #[test]
    fn the_bank_is_bounded() {
        let b = leak(Budget::new(Some(1.0)));
        for _ in 0..1_000 {
            b.deposit();
        }
        assert_eq!(b.balance(), MAX_BANKED as f64);
        let t = Duration::from_secs(100);
        let granted = (0..1_000).filter(|_| b.withdraw(t)).count();
        // The bank, plus the floor's burst.
        assert_eq!(granted, MAX_BANKED as usize + FLOOR_PER_SEC as usize);
    }

    #[test]
    fn no_budget_never_refuses() {
        let b = leak(Budget::new(None));
        assert!((0..1000).all(|_| b.withdraw(Duration::ZERO)));
    }
}
