//! Helpers every benchmark of this package uses: driving futures on plain threads, pinning
//! threads, shifting stacks, formatting, and publishing the results; the two drivers of the cost
//! benchmarks ([`drive`]), their shared tables and `BENCH_PROFILE` mode ([`cost`]) and their
//! instruction counts ([`callgrind`]); an open-loop HTTP load generator's pieces ([`open_loop`])
//! and hand-written SVG plots ([`svg`]). Included with `mod common;`; not every benchmark uses
//! every helper.
//!
//! # Publishing
//!
//! A benchmark writes its markdown with [`outln!`] and [`out!`] (as `println!` and `print!`): the
//! text goes to stdout and is kept. At its end, [`publish`] puts the kept text, under a line with
//! the date, the machine and the git commit, between `<!-- bench:NAME:start -->` and
//! `<!-- bench:NAME:end -->` in `benches/README.md`, replacing what was there (or adding the
//! section at the end of the file when the markers are missing).
#![allow(dead_code)]

use std::future::Future;
use std::hint::black_box;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use resiliency::Rejected;

pub mod callgrind;
pub mod cost;
pub mod drive;
pub mod open_loop;
pub mod svg;

use drive::Driver;

/// The waker of [`block_on`] and of the drivers ([`drive`]): unparks the thread that polls.
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
/// as a runtime's worker with nothing else to run would. The cost benchmarks use [`drive`]
/// instead, whose drivers make each future in place rather than take it by value.
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

/// A waker for this thread, made once per runner or chunk of calls (so no call pays for it).
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

/// A pointer-sized error: `Result<u64, BoxError>` is 16 B, and what tower's layers require of
/// a service's error (`Into<BoxError>`).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The same work with a boxed error: the plain call of the tower contenders, as
/// `tower::service_fn(plain_boxed)`.
pub async fn plain_boxed(x: u64) -> Result<u64, BoxError> {
    work(x).map_err(|_| "down".into())
}

/// A current-thread runtime with the time driver, as a worker thread's own.
pub fn current_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime builds")
}

/// A number from the environment variable `name`, or `default`.
fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// For `BENCH_PROFILE`: `run(calls)` on each of `BENCH_THREADS` threads (default 1, each pinned to
/// its own CPU), `calls` being `BENCH_CALLS` (default 10M) rounded up to whole `chunk`s; prints
/// one line with the time per call: a target for `perf` or `valgrind --tool=callgrind`.
pub fn profile_calls(name: &str, chunk: u64, run: impl Fn(u64) + Sync) {
    let calls = env_number("BENCH_CALLS", 10_000_000).div_ceil(chunk) * chunk;
    profile_threads(name, calls, run);
}

/// For `BENCH_PROFILE` in the cost benchmarks, as [`profile_calls`] with a driver:
/// `run(driver, calls)` on each of `BENCH_THREADS` threads (default 1, pinned), `driver` being
/// `BENCH_DRIVER` (`inlined`, the default, or `polled`) and `calls` exactly `BENCH_CALLS`
/// (default 10M): what [`callgrind::Callgrind`] runs, for N and 2N calls.
pub fn profile_driven(name: &str, run: impl Fn(Driver, u64) + Sync) {
    let driver = match std::env::var("BENCH_DRIVER") {
        Ok(name) => Driver::parse(&name).expect("BENCH_DRIVER is `inlined` or `polled`"),
        Err(_) => Driver::Inlined,
    };
    let calls = env_number("BENCH_CALLS", 10_000_000);
    profile_threads(&format!("{name}, {}", driver.name()), calls, |calls| {
        run(driver, calls)
    });
}

/// `run(calls)` on each of `BENCH_THREADS` threads, each pinned to its own CPU; prints the time
/// per call.
fn profile_threads(name: &str, calls: u64, run: impl Fn(u64) + Sync) {
    let threads = env_number("BENCH_THREADS", 1) as usize;
    let start = std::time::Instant::now();
    std::thread::scope(|scope| {
        for worker in 0..threads {
            let run = &run;
            scope.spawn(move || {
                pin_to_cpu(worker);
                run(calls);
            });
        }
    });
    eprintln!(
        "{threads} thread(s) x {calls} calls of {name}: {:.1} ns per call per thread",
        start.elapsed().as_nanos() as f64 / calls.max(1) as f64
    );
}

/// The version of `name` in the workspace's `Cargo.lock`, so that the tables say what was
/// measured.
pub fn crate_version(lock: &str, name: &str) -> String {
    let needle = format!("name = \"{name}\"\nversion = \"");
    lock.find(&needle)
        .and_then(|at| {
            let rest = &lock[at + needle.len()..];
            rest.find('"').map(|end| rest[..end].to_string())
        })
        .unwrap_or_else(|| "?".into())
}

/// Tower's hedge policy in the benchmarks that race against `tower::hedge`: every request may be
/// cloned and hedged.
#[derive(Clone, Copy, Debug)]
pub struct HedgeAll;

impl tower::hedge::Policy<u64> for HedgeAll {
    fn clone_request(&self, request: &u64) -> Option<u64> {
        Some(*request)
    }

    fn can_retry(&self, _: &u64) -> bool {
        true
    }
}

/// A duration in ms with one decimal.
pub fn ms(d: std::time::Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// The nearest-rank percentile `p` (0..=1) of sorted values.
pub fn percentile(sorted: &[std::time::Duration], p: f64) -> Option<std::time::Duration> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// Raises the open-files limit to its maximum, and returns it: an overloaded HTTP run holds
/// thousands of sockets.
pub fn raise_open_files() -> u64 {
    // SAFETY: `limit` is a plain struct on the stack, passed by pointer as the calls require.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        }
        limit.rlim_cur
    }
}

/// A duration in ms with one decimal, or a dash for none.
pub fn ms_or_dash(d: Option<std::time::Duration>) -> String {
    d.map_or("—".into(), ms)
}

/// A goal's verdict.
pub fn pass(ok: bool) -> &'static str {
    if ok {
        "PASS"
    } else {
        "MISS"
    }
}

/// A local HTTP server on a current-thread runtime of its own thread: its address (`url`, without
/// a trailing `/`), and what stops it. Dropping it stops the server and joins the thread; the
/// connections still queued are dropped, unanswered, with the runtime.
pub struct Server {
    pub url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Serves the router that `app` makes (on the server's runtime, first thing) on 127.0.0.1,
    /// from a thread pinned to CPU `cpu` if given.
    pub fn start<A, R>(cpu: Option<usize>, app: A) -> Server
    where
        A: FnOnce() -> R + Send + 'static,
        R: Future<Output = axum::Router>,
    {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("server".into())
            .spawn(move || {
                if let Some(cpu) = cpu {
                    pin_to_cpu(cpu);
                }
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("the server's runtime builds");
                runtime.block_on(async move {
                    let app = app().await;
                    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                        .await
                        .expect("binds 127.0.0.1");
                    addr_tx.send(listener.local_addr().unwrap()).unwrap();
                    tokio::select! {
                        served = axum::serve(listener, app) => served.expect("the server runs"),
                        _ = stopped => {}
                    }
                });
                drop(runtime);
            })
            .expect("the server thread starts");
        let addr = addr_rx.recv().expect("the server reports its address");
        Server {
            url: format!("http://{addr}"),
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A sample's clock, as a worker thread of [`sample_threads`] sees it.
pub struct Timing<'a> {
    barrier: &'a std::sync::Barrier,
    stop: &'a std::sync::atomic::AtomicBool,
}

impl Timing<'_> {
    /// Waits for the other workers, then repeats `chunk` (which makes `calls` calls) until the
    /// sample ends: the time taken and the calls made.
    pub fn timed(&self, calls: u64, mut chunk: impl FnMut()) -> (std::time::Duration, u64) {
        self.barrier.wait();
        let start = std::time::Instant::now();
        let mut made = 0;
        while !self.stop.load(std::sync::atomic::Ordering::Relaxed) {
            chunk();
            made += calls;
        }
        (start.elapsed(), made)
    }

    /// As [`timed`](Self::timed), for a `chunk` that awaits (a yield to its runtime).
    pub async fn timed_async<F: Future<Output = ()>>(
        &self,
        calls: u64,
        mut chunk: impl FnMut() -> F,
    ) -> (std::time::Duration, u64) {
        self.barrier.wait();
        let start = std::time::Instant::now();
        let mut made = 0;
        while !self.stop.load(std::sync::atomic::Ordering::Relaxed) {
            chunk().await;
            made += calls;
        }
        (start.elapsed(), made)
    }
}

/// One sample on `threads` threads (pinned to their own CPUs, stacks shifted by `round`): each runs
/// `worker`, which warms up and then hands its calls to [`Timing::timed`]; the sample ends
/// `length` after they all started. Returns the mean ns per call over the threads, and the calls
/// made.
pub fn sample_threads(
    threads: usize,
    round: usize,
    length: std::time::Duration,
    worker: impl Fn(&Timing<'_>) -> (std::time::Duration, u64) + Sync,
) -> (f64, u64) {
    let stop = std::sync::atomic::AtomicBool::new(false);
    let barrier = std::sync::Barrier::new(threads + 1);
    let results: Vec<(std::time::Duration, u64)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|n| {
                let timing = Timing {
                    barrier: &barrier,
                    stop: &stop,
                };
                let worker = &worker;
                scope.spawn(move || {
                    pin_to_cpu(n);
                    with_stack_shift(round, || worker(&timing))
                })
            })
            .collect();
        barrier.wait();
        std::thread::sleep(length);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let ns = results
        .iter()
        .map(|(time, calls)| time.as_nanos() as f64 / *calls as f64)
        .sum::<f64>()
        / threads as f64;
    (ns, results.iter().map(|r| r.1).sum())
}

/// The markdown written so far with [`outln!`] / [`out!`].
static REPORT: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

/// Writes `text` to stdout and keeps it for [`publish`]. Use [`outln!`] and [`out!`].
pub fn emit(text: std::fmt::Arguments<'_>) {
    use std::fmt::Write as _;
    use std::io::Write as _;
    let mut report = REPORT.lock().unwrap_or_else(|e| e.into_inner());
    let from = report.len();
    let _ = report.write_fmt(text);
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(report[from..].as_bytes());
    let _ = stdout.flush();
}

/// As `println!`, and kept for [`publish`].
macro_rules! outln {
    () => {
        $crate::common::emit(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::common::emit(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// As `print!`, and kept for [`publish`].
#[allow(unused_macros)]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::common::emit(format_args!($($arg)*))
    };
}

#[allow(unused_imports)]
pub(crate) use {out, outln};

/// Puts what this benchmark wrote with [`outln!`] / [`out!`] into its section of
/// `benches/README.md` (see the module docs), headed by the date, the machine and the commit; headings move down two levels to sit under the README's own. An error is
/// reported on stderr and does not fail the run.
pub fn publish(name: &str) {
    publish_run(
        name,
        &format!("cargo bench -p resiliency-benches --bench {name}"),
    );
}

/// As [`publish`], for a benchmark run by another `command` (one that needs `--features`).
pub fn publish_run(name: &str, command: &str) {
    let text = REPORT.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut body = format!(
        "_Written by `{command}` on {}, {}, commit {}._\n\n",
        utc_date(),
        machine(),
        git_commit(),
    );
    for line in text.trim_end().lines() {
        if line.starts_with('#') && line.trim_start_matches('#').starts_with(' ') {
            body.push_str("##");
        }
        body.push_str(line);
        body.push('\n');
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    match replace_section(&path, name, &body) {
        Ok(()) => eprintln!("{name}: tables written to {}", path.display()),
        Err(e) => eprintln!("{name}: could not write {}: {e}", path.display()),
    }
}

/// Replaces the text between `<!-- bench:NAME:start -->` and `<!-- bench:NAME:end -->` in the
/// file at `path` with `body`, or appends the section with its markers.
fn replace_section(path: &std::path::Path, name: &str, body: &str) -> std::io::Result<()> {
    let start = format!("<!-- bench:{name}:start -->");
    let end = format!("<!-- bench:{name}:end -->");
    let old = match std::fs::read_to_string(path) {
        Ok(old) => old,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let section = format!("{start}\n{body}{end}");
    let new = match (old.find(&start), old.find(&end)) {
        (Some(s), Some(e)) if s < e => {
            format!("{}{section}{}", &old[..s], &old[e + end.len()..])
        }
        _ => {
            let sep = if old.is_empty() || old.ends_with("\n\n") {
                ""
            } else if old.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            };
            format!("{old}{sep}{section}\n")
        }
    };
    let tmp = path.with_extension("md.tmp");
    std::fs::write(&tmp, new)?;
    std::fs::rename(&tmp, path)
}

/// Today's date (UTC), `YYYY-MM-DD`.
fn utc_date() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Days since 1970-01-01 to a civil date (Howard Hinnant's `civil_from_days`).
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// The machine: CPUs available to this process, architecture, and CPU model when
/// `/proc/cpuinfo` names it.
fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.split_whitespace().collect::<Vec<_>>().join(" "))
        });
    let mut out = format!("{cpus} CPUs, {}", std::env::consts::ARCH);
    if let Some(model) = model {
        out.push_str(&format!(" ({model})"));
    }
    out
}

/// `git rev-parse --short HEAD` of this checkout, or "unknown".
fn git_commit() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .map_or_else(|| "unknown".into(), |s| format!("`{s}`"))
}

/// Per-contender results of [`rounds`]: `[1 thread, 2 threads]` each.
pub struct Rounds {
    /// The median ns per call.
    pub medians: Vec<[f64; 2]>,
    /// The best (lowest) ns per call.
    pub best: Vec<[f64; 2]>,
    /// The fewest calls any one sample made.
    pub fewest_calls: u64,
}

/// `samples` rounds over every contender (`0..contenders`) on 1 and on 2 threads, interleaved so
/// that drift in the machine's load touches every contender alike. `sample(contender, threads,
/// round)` returns (ns per call, calls made).
pub fn rounds(
    contenders: usize,
    samples: usize,
    mut sample: impl FnMut(usize, usize, usize) -> (f64, u64),
) -> Rounds {
    let mut all = vec![[Vec::new(), Vec::new()]; contenders];
    let mut fewest_calls = u64::MAX;
    for round in 0..samples {
        for (c, per_thread) in all.iter_mut().enumerate() {
            for (t, threads) in [1, 2].into_iter().enumerate() {
                let (ns, calls) = sample(c, threads, round);
                per_thread[t].push(ns);
                fewest_calls = fewest_calls.min(calls);
            }
        }
    }
    let best = all
        .iter()
        .map(|per_thread| {
            per_thread
                .each_ref()
                .map(|s| s.iter().copied().fold(f64::INFINITY, f64::min))
        })
        .collect();
    let medians = all
        .iter_mut()
        .map(|[one, two]| [median(one), median(two)])
        .collect();
    Rounds {
        medians,
        best,
        fewest_calls,
    }
}
