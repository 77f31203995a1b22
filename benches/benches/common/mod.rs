//! Helpers every benchmark of this package uses: driving futures on plain threads, pinning
//! threads, shifting stacks, and formatting. Included with `mod common;`; not every benchmark uses
//! every helper.
#![allow(dead_code)]

use std::future::Future;
use std::hint::black_box;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use resilient::Rejected;

/// The waker of [`block_on`]: unparks the thread that polls.
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Pins this thread to the `n`-th CPU it may run on (modulo their number), so that 2 worker
/// threads always run on 2 different cores and really contend, rather than taking turns on one.
pub fn pin_to_cpu(n: usize) {
    // SAFETY: `set` is a plain bit set on the stack, passed with its size; `CPU_ISSET` and
    // `CPU_SET` index within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(0, size, &mut set) != 0 {
            return;
        }
        let allowed: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect();
        if allowed.is_empty() {
            return;
        }
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(allowed[n % allowed.len()], &mut one);
        libc::sched_setaffinity(0, size, &one);
    }
}

/// Runs `f` with the stack moved down by `shift % 8` half-kilobytes. Where a thread's stack sits
/// relative to a breaker's fields (modulo 4 KiB, where x86 can hold a load back behind an
/// unrelated store) can move a tight loop's time by tens of percent, and glibc hands each new
/// thread the same stack again; shifting it between rounds spreads that luck over the samples.
pub fn with_stack_shift<R>(shift: usize, f: impl FnOnce() -> R) -> R {
    #[inline(never)]
    fn padded<const N: usize, R>(f: impl FnOnce() -> R) -> R {
        let pad = [0u8; N];
        black_box(&pad);
        let out = f();
        black_box(&pad);
        out
    }
    match shift % 8 {
        0 => padded::<0, R>(f),
        1 => padded::<512, R>(f),
        2 => padded::<1024, R>(f),
        3 => padded::<1536, R>(f),
        4 => padded::<2048, R>(f),
        5 => padded::<2560, R>(f),
        6 => padded::<3072, R>(f),
        _ => padded::<3584, R>(f),
    }
}

/// Polls `future` to completion on this thread. Nothing benchmarked here waits for I/O or timers,
/// so the first poll nearly always completes; when one returns `Pending` (only a contended
/// `tokio::sync::Mutex` inside tower-resilience does), the thread parks until `waker` unparks it,
/// as a runtime's worker with nothing else to run would.
#[inline(always)]
pub fn block_on<F: Future>(waker: &Waker, future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(waker);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}

/// A waker for this thread, made once per chunk of calls (so its cost is not in any call).
pub fn thread_waker() -> Waker {
    Waker::from(Arc::new(Unpark(std::thread::current())))
}

pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// The 1, 5 and 15 minute load averages: other processes on the machine disturb the figures.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// The error of the benchmarked call: it can carry a `Rejected`, as the attributes require.
#[derive(Debug)]
#[allow(dead_code)] // the variants are there to be returned, never inspected
pub enum CallError {
    Down,
    Refused(Rejected),
}

impl From<Rejected> for CallError {
    fn from(rejected: Rejected) -> Self {
        CallError::Refused(rejected)
    }
}

/// Trivial work that the optimizer cannot remove or hoist.
#[inline(always)]
pub fn work(x: u64) -> Result<u64, CallError> {
    let x = black_box(x);
    if x == u64::MAX {
        return Err(CallError::Down);
    }
    Ok(black_box(x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7))
}

/// The baseline: the same work in a plain `async fn`.
pub async fn plain(x: u64) -> Result<u64, CallError> {
    work(x)
}
