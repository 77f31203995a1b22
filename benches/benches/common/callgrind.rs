//! Instructions per call, counted by callgrind: the benchmark runs its own executable again under
//! `valgrind --tool=callgrind`, in its `BENCH_PROFILE` mode (one contender, one driver, 1 thread,
//! exactly `BENCH_CALLS` calls), once for `N` calls and once for `2N`, and reads each run's total
//! of instructions executed (the `totals:` or `summary:` line of callgrind's output file). What
//! the two runs share (starting the process, building the contenders, warming up, exiting)
//! cancels out of the difference, which is the instructions of `N` calls:
//! `(I(2N) - I(N)) / N` per call. Nothing is installed: without `valgrind` on the `PATH` the
//! counts are skipped and the benchmark says so.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::drive::Driver;

/// Set in the environment of the runs under callgrind: see [`under_callgrind`].
const UNDER_CALLGRIND: &str = "BENCH_UNDER_CALLGRIND";

/// True in a run that [`Callgrind`] started. Under callgrind a process runs tens of times slower,
/// and what reads the wall clock sees time pass that fast: a benchmark whose contender acts on
/// elapsed time (the lag signal of `#[too_busy]`) sets it back to its native path there.
pub fn under_callgrind() -> bool {
    std::env::var_os(UNDER_CALLGRIND).is_some()
}

/// Runs this executable under callgrind.
pub struct Callgrind {
    exe: PathBuf,
    /// `N`: the difference is taken between `N` and `2N` calls.
    pub calls: u64,
    /// A function before whose (last) entry every count is zeroed (`--zero-before`): for a
    /// benchmark whose set-up executes a number of instructions that varies from run to run (a
    /// clock's calibration loop, bounded by time), which the difference would not cancel.
    pub zero_before: Option<String>,
}

impl Callgrind {
    /// Callgrind, if `valgrind` runs; otherwise why not, in a sentence's words.
    pub fn find(calls: u64) -> Result<Callgrind, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("this benchmark's executable could not be found ({e})"))?;
        match Command::new("valgrind")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
        {
            Ok(status) if status.success() => Ok(Callgrind {
                exe,
                calls,
                zero_before: None,
            }),
            Ok(status) => Err(format!("`valgrind --version` failed ({status})")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err("valgrind is not installed".into())
            }
            Err(e) => Err(format!("valgrind could not be run ({e})")),
        }
    }

    /// Instructions per call of contender number `which` (its `BENCH_PROFILE`) on `driver`.
    pub fn per_call(&self, which: usize, driver: Driver) -> Result<f64, String> {
        let once = self.total(which, driver, self.calls)?;
        let twice = self.total(which, driver, 2 * self.calls)?;
        Ok((twice as f64 - once as f64) / self.calls as f64)
    }

    /// The instructions executed by a whole profile run of `calls` calls.
    fn total(&self, which: usize, driver: Driver, calls: u64) -> Result<u64, String> {
        let out = std::env::temp_dir().join(format!(
            "resiliency-bench-{}-{which}-{}-{calls}.callgrind",
            std::process::id(),
            driver.name()
        ));
        let mut valgrind = Command::new("valgrind");
        valgrind
            .arg("--tool=callgrind")
            .arg(format!("--callgrind-out-file={}", out.display()));
        if let Some(function) = &self.zero_before {
            valgrind.arg(format!("--zero-before={function}"));
        }
        let run = valgrind
            .arg(&self.exe)
            .env("BENCH_PROFILE", which.to_string())
            .env("BENCH_DRIVER", driver.name())
            .env("BENCH_CALLS", calls.to_string())
            .env("BENCH_THREADS", "1")
            .env(UNDER_CALLGRIND, "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| format!("valgrind could not be run ({e})"))?;
        let text = std::fs::read_to_string(&out);
        let _ = std::fs::remove_file(&out);
        if !run.status.success() {
            let stderr = String::from_utf8_lossy(&run.stderr);
            let last = stderr.lines().last().unwrap_or("");
            return Err(format!("callgrind run failed ({}): {last}", run.status));
        }
        let text = text.map_err(|e| format!("callgrind's output could not be read ({e})"))?;
        // `totals:` (the events since the last zeroing, which `--zero-before` moves) when there
        // is one, else `summary:` (the whole run's); without zeroing the two are the same.
        let count = |prefix: &str| {
            text.lines().find_map(|line| {
                line.strip_prefix(prefix)
                    .and_then(|rest| rest.split_whitespace().next())
                    .and_then(|n| n.parse().ok())
            })
        };
        count("totals:")
            .or_else(|| count("summary:"))
            .ok_or_else(|| "callgrind's output has no `totals:` or `summary:` line".into())
    }
}
