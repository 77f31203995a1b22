//! What the cost benchmarks (`breaker`, `too_busy_cost`, `race_overhead`, `timeout_cost`,
//! `rate_limit_cost`) share: contenders that run on both [drivers](super::drive), their figures
//! per driver and thread count, the table that shows them beside the instructions per call
//! counted by [callgrind](super::callgrind), and their `BENCH_PROFILE` mode.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use tower::Service;

use super::callgrind::Callgrind;
use super::drive::{calls, service_calls, Driver};
use super::{outln, rounds, thread_waker};

/// Makes `n` calls with a driver, on the thread that made it (with a waker for that thread, made
/// with the runner: no call pays for it).
pub type Runner = Box<dyn FnMut(Driver, u64)>;

/// What a contender is in the tables and the goals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The plain call that others are compared with.
    Baseline,
    /// One of ours.
    Ours,
    /// A peer crate's.
    Peer,
    /// Neither: a figure to read the others by.
    Reference,
}

/// One line of a cost table.
pub struct Contender {
    pub name: String,
    pub role: Role,
    /// The index of the baseline its "added" is taken against (its own for a baseline).
    pub base: usize,
    /// The size of its call's future before the first poll (for a tower service, of the future
    /// `call` returns).
    pub future_size: usize,
    /// Makes a runner, on the thread that will use it.
    pub make: Box<dyn Fn() -> Runner + Sync>,
}

impl Contender {
    /// A contender whose calls are `call(&handle, i)`; each runner holds a clone of `handle`, so
    /// runners share what its clones share.
    pub fn calls<H, F, C>(
        name: impl Into<String>,
        role: Role,
        base: usize,
        handle: H,
        call: C,
    ) -> Self
    where
        H: Clone + Send + Sync + 'static,
        F: Future,
        C: Fn(&H, u64) -> F + Copy + Send + Sync + 'static,
    {
        Contender {
            name: name.into(),
            role,
            base,
            future_size: std::mem::size_of::<F>(),
            make: Box::new(move || {
                let handle = handle.clone();
                let waker = thread_waker();
                Box::new(move |driver, n| calls(driver, &waker, n, |i| call(&handle, i)))
            }),
        }
    }

    /// The baseline of the tower peers: a plain `service_fn` over `plain_boxed`, called as they
    /// are (`ready` then `call`); `index` is its own place in the table.
    pub fn plain_service(index: usize) -> Self {
        Contender::requests(
            "plain `service_fn` (`ready` + `call`)",
            Role::Baseline,
            index,
            || tower::service_fn(super::plain_boxed),
        )
    }

    /// A contender whose calls are requests to a tower service (`ready()`, then `call(i)`); each
    /// runner gets its own service from `service()`.
    pub fn requests<S, M>(name: impl Into<String>, role: Role, base: usize, service: M) -> Self
    where
        S: Service<u64> + 'static,
        M: Fn() -> S + Send + Sync + 'static,
    {
        Contender {
            name: name.into(),
            role,
            base,
            future_size: std::mem::size_of::<S::Future>(),
            make: Box::new(move || {
                let mut service = service();
                let waker = thread_waker();
                Box::new(move |driver, n| service_calls(driver, &waker, n, &mut service))
            }),
        }
    }
}

/// Clones of one service: each runner's service shares what the clones share.
pub fn clones_of<S: Clone + Send>(prototype: S) -> impl Fn() -> S + Send + Sync {
    let prototype = Mutex::new(prototype);
    move || prototype.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// How long and how often to sample, and the `N` of the instruction counts. `BENCH_QUICK=1`
/// makes a quick run for development: 3 samples of 50 ms, `N` = 20,000, nothing published.
pub struct Plan {
    pub samples: usize,
    pub sample: Duration,
    pub callgrind_calls: u64,
    pub quick: bool,
}

impl Plan {
    pub fn from_env(samples: usize, sample: Duration, callgrind_calls: u64) -> Plan {
        let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
        if quick {
            Plan {
                samples: 3,
                sample: Duration::from_millis(50),
                callgrind_calls: 20_000,
                quick,
            }
        } else {
            Plan {
                samples,
                sample,
                callgrind_calls,
                quick,
            }
        }
    }
}

/// Figures by `[contender][driver][threads]`: drivers in [`Driver::ALL`] order, threads 1 and 2.
pub type Grid = Vec<[[f64; 2]; 2]>;

/// The ns per call of every contender on both drivers and 1 and 2 threads.
pub struct Figures {
    pub medians: Grid,
    pub best: Grid,
    /// The fewest calls any one sample made.
    pub fewest_calls: u64,
}

/// `samples` rounds of [`rounds`] over every contender on both drivers, interleaved.
/// `sample(contender, driver, threads, round)` returns (ns per call, calls made).
pub fn measure(
    all: &[Contender],
    samples: usize,
    mut sample: impl FnMut(&Contender, Driver, usize, usize) -> (f64, u64),
) -> Figures {
    let figures = rounds(all.len() * 2, samples, |k, threads, round| {
        sample(&all[k / 2], Driver::ALL[k % 2], threads, round)
    });
    let grid = |flat: Vec<[f64; 2]>| -> Grid { flat.chunks(2).map(|c| [c[0], c[1]]).collect() };
    Figures {
        medians: grid(figures.medians),
        best: grid(figures.best),
        fewest_calls: figures.fewest_calls,
    }
}

/// A contender's figure minus its baseline's, on the same driver and thread count.
pub fn added(all: &[Contender], grid: &Grid, c: usize, d: usize, t: usize) -> f64 {
    grid[c][d][t] - grid[all[c].base][d][t]
}

/// Instructions per call, by `[contender][driver]`, or why there are none.
pub enum Instructions {
    Counted {
        per_call: Vec<[Option<f64>; 2]>,
        calls: u64,
        failures: Vec<String>,
    },
    Skipped(String),
}

impl Instructions {
    /// Counts every contender on both drivers with callgrind, one run after another, printing
    /// progress on stderr.
    pub fn count(all: &[Contender], calls: u64) -> Instructions {
        Instructions::count_from(all, calls, None)
    }

    /// As [`count`](Self::count), every count zeroed at the (last) entry to the function named
    /// `zero_before` (callgrind's `--zero-before`, a demangled name or pattern) when given: for a
    /// set-up whose instructions vary from run to run.
    pub fn count_from(all: &[Contender], calls: u64, zero_before: Option<&str>) -> Instructions {
        let mut callgrind = match Callgrind::find(calls) {
            Ok(callgrind) => callgrind,
            Err(why) => return Instructions::Skipped(why),
        };
        callgrind.zero_before = zero_before.map(str::to_owned);
        let mut failures = Vec::new();
        let per_call = all
            .iter()
            .enumerate()
            .map(|(c, contender)| {
                Driver::ALL.map(|driver| {
                    eprintln!("callgrind: {} ({}), {}", contender.name, c, driver.name());
                    callgrind
                        .per_call(c, driver)
                        .map_err(|e| {
                            failures.push(format!("{}, {}: {e}", contender.name, driver.name()))
                        })
                        .ok()
                })
            })
            .collect();
        Instructions::Counted {
            per_call,
            calls,
            failures,
        }
    }

    /// Instructions per call of contender `c` on driver `d`.
    pub fn of(&self, c: usize, d: usize) -> Option<f64> {
        match self {
            Instructions::Counted { per_call, .. } => per_call[c][d],
            Instructions::Skipped(_) => None,
        }
    }

    /// Contender `c`'s instructions per call minus its baseline's, on driver `d`.
    pub fn added(&self, all: &[Contender], c: usize, d: usize) -> Option<f64> {
        Some(self.of(c, d)? - self.of(all[c].base, d)?)
    }

    /// The goal table "ours adds fewer instructions per call than the peer", one row per driver:
    /// contender `ours` against contender `peer`, each minus its own baseline.
    pub fn fewer_than(&self, all: &[Contender], ours: usize, peer: usize) {
        outln!("| driver | ours added | tower's added | result |");
        outln!("|---|---:|---:|---|");
        for (d, driver) in Driver::ALL.into_iter().enumerate() {
            let (ours, theirs) = (self.added(all, ours, d), self.added(all, peer, d));
            outln!(
                "| {} | {} | {} | {} |",
                driver.name(),
                or_dash(ours, |n| format!("{n:+.1}")),
                or_dash(theirs, |n| format!("{n:+.1}")),
                match (ours, theirs) {
                    (Some(ours), Some(theirs)) => super::pass(ours < theirs),
                    _ => "not counted",
                }
            );
        }
        outln!();
    }

    /// The sentence that says how they were counted, or why they were not.
    pub fn describe(&self) -> String {
        match self {
            Instructions::Counted {
                calls, failures, ..
            } => {
                let mut text = format!(
                    "Instructions per call: counted by `valgrind --tool=callgrind` on 1 thread, \
                     (I(2N) - I(N)) / N with N = {} calls of the contender alone \
                     (`BENCH_PROFILE`).",
                    super::group(*calls)
                );
                for failure in failures {
                    text.push_str(&format!(" Not counted: {failure}."));
                }
                text
            }
            Instructions::Skipped(why) => {
                format!("Instructions per call: skipped, because {why} (nothing was installed).")
            }
        }
    }
}

/// The table of `grid` (ns per call) for every contender, each cell with its "added", and the
/// instructions per call beside them when given.
pub fn print_table(all: &[Contender], grid: &Grid, instructions: Option<&Instructions>) {
    let counted = instructions.filter(|i| matches!(i, Instructions::Counted { .. }));
    let mut head = "| contender | added vs |".to_string();
    let mut rule = "|---|---|".to_string();
    for driver in Driver::ALL {
        for threads in ["1 thread", "2 threads"] {
            head.push_str(&format!(" ns, {}, {threads} |", driver.name()));
            rule.push_str("---:|");
        }
    }
    if counted.is_some() {
        for driver in Driver::ALL {
            head.push_str(&format!(" instructions, {} |", driver.name()));
            rule.push_str("---:|");
        }
    }
    outln!("{head}");
    outln!("{rule}");
    for (c, contender) in all.iter().enumerate() {
        let baseline = contender.base == c;
        let mut row = format!(
            "| {} | {} |",
            contender.name,
            if baseline {
                "—"
            } else {
                &all[contender.base].name
            }
        );
        for d in 0..2 {
            for t in 0..2 {
                if baseline {
                    row.push_str(&format!(" {:.1} |", grid[c][d][t]));
                } else {
                    row.push_str(&format!(
                        " {:.1} ({:+.1}) |",
                        grid[c][d][t],
                        added(all, grid, c, d, t)
                    ));
                }
            }
        }
        if let Some(instructions) = counted {
            for d in 0..2 {
                match (instructions.of(c, d), instructions.added(all, c, d)) {
                    (Some(n), _) if baseline => row.push_str(&format!(" {n:.1} |")),
                    (Some(n), Some(added)) => row.push_str(&format!(" {n:.1} ({added:+.1}) |")),
                    (Some(n), None) => row.push_str(&format!(" {n:.1} |")),
                    (None, _) => row.push_str(" — |"),
                }
            }
        }
        outln!("{row}");
    }
}

/// A figure that may be missing, for a goal's table.
pub fn or_dash(figure: Option<f64>, format: impl Fn(f64) -> String) -> String {
    figure.map_or_else(|| "—".into(), format)
}

/// `BENCH_PROFILE=list` prints the contenders' numbers; `BENCH_PROFILE=<number>` runs that
/// contender alone ([`super::profile_driven`]: `BENCH_DRIVER`, exactly `BENCH_CALLS` calls on
/// each of `BENCH_THREADS` threads), each thread calling `run(contender, driver, calls)`: the
/// benchmark's own setting around the contender's runner.
pub fn profile(all: &[Contender], which: &str, run: impl Fn(&Contender, Driver, u64) + Sync) {
    if which == "list" {
        for (c, contender) in all.iter().enumerate() {
            println!("{c}: {}", contender.name);
        }
        return;
    }
    let contender = which
        .parse::<usize>()
        .ok()
        .and_then(|c| all.get(c))
        .unwrap_or_else(|| {
            panic!(
                "BENCH_PROFILE is `list` or a contender number below {}",
                all.len()
            )
        });
    super::profile_driven(&contender.name, |driver, calls| {
        run(contender, driver, calls)
    });
}

/// `calls` calls in chunks of at most `chunk`: `chunk_of(n)` for each.
pub fn in_chunks(calls: u64, chunk: u64, mut chunk_of: impl FnMut(u64)) {
    let mut left = calls;
    while left > 0 {
        let n = left.min(chunk);
        chunk_of(n);
        left -= n;
    }
}
