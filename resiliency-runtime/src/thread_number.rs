//! A number for each thread, for counts split into stripes (the rate rule's window, the metrics'
//! counts): a thread takes the next number at its first use, so the first threads of a process (a
//! runtime's workers) have numbers of their own, in order; a number is never reused.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The number the next thread takes.
static NEXT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's number, `usize::MAX` until its first use.
    static NUMBER: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// This thread's number: 0 for the first thread to ask, 1 for the next, and so on.
#[inline(always)]
pub(crate) fn this_thread() -> usize {
    NUMBER.with(|number| match number.get() {
        usize::MAX => take(number),
        n => n,
    })
}

/// This thread's first use: it takes the next number.
#[cold]
fn take(number: &Cell<usize>) -> usize {
    // Never `usize::MAX`, the mark of a thread without a number.
    let n = NEXT.fetch_add(1, Relaxed) & (usize::MAX >> 1);
    number.set(n);
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_keeps_its_number_and_another_takes_a_later_one() {
        let mine = this_thread();
        assert_eq!(this_thread(), mine);
        let other = std::thread::spawn(this_thread).join().unwrap();
        assert_ne!(other, mine);
        assert!(other > mine || NEXT.load(Relaxed) > mine);
    }
}
