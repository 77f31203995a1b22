//! The server's dependency: latency shapes drawn per request, fast failures, and an optional FIFO
//! gate of slots whose capacity (and hold time) can change mid-run; and the Poisson arrivals.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::oneshot;

/// Seed of the draws made per request (its hold and whether it fails): a function of the seed and
/// the request's index, so every contender's request `i` gets the same hold and the same fate.
const DRAW_SEED: u64 = 0x5EED_0A07_D0D0_0002;
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// splitmix64's finalizer.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform in (0, 1] from a 64-bit hash.
fn unit_of(z: u64) -> f64 {
    ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64
}

/// The `stream`-th uniform in (0, 1] of request `i` (streams: 0 and 1 the hold, 2 the failure).
fn draw(i: u64, stream: u64) -> f64 {
    let key = i.wrapping_mul(4).wrapping_add(stream).wrapping_add(1);
    unit_of(mix(DRAW_SEED.wrapping_add(key.wrapping_mul(GOLDEN))))
}

/// The offsets from the run's start of Poisson arrivals at `rate` per second, up to `run`:
/// exponential gaps from a splitmix64 sequence seeded with `seed`.
pub(crate) fn poisson(rate: f64, run: Duration, seed: u64) -> Vec<Duration> {
    let mut state = seed;
    let mut t = 0.0;
    let mut out = Vec::new();
    loop {
        state = state.wrapping_add(GOLDEN);
        t += -unit_of(mix(state)).ln() / rate;
        if t >= run.as_secs_f64() {
            return out;
        }
        out.push(Duration::from_secs_f64(t));
    }
}

/// How long a call holds the dependency (before the phase's slowdown factor).
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum Shape {
    Constant(Duration),
    /// `slow` with probability `p_slow`, else `fast`.
    Bimodal {
        slow: Duration,
        fast: Duration,
        p_slow: f64,
    },
    LogNormal {
        median: Duration,
        sigma: f64,
    },
    /// Pareto with scale `xm` and shape `alpha`, capped at `cap`.
    Pareto {
        xm: Duration,
        alpha: f64,
        cap: Duration,
    },
}

impl Shape {
    /// The hold of request `i`.
    pub(crate) fn hold(&self, i: u64) -> Duration {
        let u = draw(i, 0);
        match *self {
            Shape::Constant(d) => d,
            Shape::Bimodal { slow, fast, p_slow } => {
                if u <= p_slow {
                    slow
                } else {
                    fast
                }
            }
            Shape::LogNormal { median, sigma } => {
                // Box–Muller: a standard normal from two uniforms.
                let z = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * draw(i, 1)).cos();
                median.mul_f64((sigma * z).exp())
            }
            Shape::Pareto { xm, alpha, cap } => xm.mul_f64(u.powf(-1.0 / alpha)).min(cap),
        }
    }

    /// The expected hold, from the shape's parameters.
    pub(crate) fn mean(&self) -> Duration {
        match *self {
            Shape::Constant(d) => d,
            Shape::Bimodal { slow, fast, p_slow } => {
                slow.mul_f64(p_slow) + fast.mul_f64(1.0 - p_slow)
            }
            Shape::LogNormal { median, sigma } => median.mul_f64((sigma * sigma / 2.0).exp()),
            // E[min(X, cap)] = xm + xm / (alpha - 1) * (1 - (xm / cap)^(alpha - 1)).
            Shape::Pareto { xm, alpha, cap } => {
                let tail = 1.0 - (xm.as_secs_f64() / cap.as_secs_f64()).powf(alpha - 1.0);
                xm.mul_f64(1.0 + tail / (alpha - 1.0))
            }
        }
    }

    pub(crate) fn describe(&self) -> String {
        let ms = |d: Duration| format!("{} ms", d.as_millis());
        match *self {
            Shape::Constant(d) => format!("constant {}", ms(d)),
            Shape::Bimodal { slow, fast, p_slow } => format!(
                "bimodal: {} with probability {:.2}, else {}",
                ms(slow),
                p_slow,
                ms(fast)
            ),
            Shape::LogNormal { median, sigma } => {
                format!("lognormal: median {}, σ {sigma}", ms(median))
            }
            Shape::Pareto { xm, alpha, cap } => format!(
                "Pareto: minimum {}, α {alpha}, capped at {} s",
                ms(xm),
                cap.as_secs_f64()
            ),
        }
    }
}

/// Whether request `i` fails at once, when a share `fail_share` of calls do.
pub(crate) fn fails(fail_share: f64, i: u64) -> bool {
    fail_share > 0.0 && draw(i, 2) <= fail_share
}

/// What the handler waits on: a hold of the shape (times the current slowdown factor), behind a
/// gate of slots when the dependency has a capacity; a share of calls fail at once.
#[derive(Debug)]
pub(crate) struct Dependency {
    shape: Shape,
    fail_share: f64,
    gate: Option<Gate>,
    /// The slowdown factor of holds (an `f64`'s bits).
    scale: AtomicU64,
}

impl Dependency {
    pub(crate) fn new(shape: Shape, fail_share: f64, slots: Option<u32>, scale: f64) -> Self {
        Dependency {
            shape,
            fail_share,
            gate: slots.map(Gate::new),
            scale: AtomicU64::new(scale.to_bits()),
        }
    }

    pub(crate) fn fails(&self, i: u64) -> bool {
        fails(self.fail_share, i)
    }

    /// Request `i`'s hold at the current slowdown factor.
    pub(crate) fn hold(&self, i: u64) -> Duration {
        self.shape
            .hold(i)
            .mul_f64(f64::from_bits(self.scale.load(Relaxed)))
    }

    /// A slot of the gate (waiting in line for one), or nothing where there is no gate.
    pub(crate) async fn enter(&self) -> Option<Slot<'_>> {
        match &self.gate {
            Some(gate) => Some(gate.enter().await),
            None => None,
        }
    }

    /// Applies a phase's state: the gate's slots (a dependency without a gate has none) and the
    /// slowdown factor.
    pub(crate) fn set(&self, slots: Option<u32>, scale: f64) {
        if let (Some(gate), Some(slots)) = (&self.gate, slots) {
            gate.set_capacity(slots);
        }
        self.scale.store(scale.to_bits(), Relaxed);
    }

    /// The gate's slots now, if it has a gate.
    pub(crate) fn slots(&self) -> Option<u32> {
        self.gate.as_ref().map(Gate::capacity)
    }
}

/// A FIFO gate whose capacity changes at once, even with a queue (tokio's `Semaphore` cannot
/// take permits back from a queue): `busy`, `capacity` and the line of waiters under a mutex.
#[derive(Debug)]
struct Gate {
    state: Mutex<GateState>,
}

#[derive(Debug)]
struct GateState {
    busy: u32,
    capacity: u32,
    queue: VecDeque<oneshot::Sender<()>>,
}

impl Gate {
    fn new(capacity: u32) -> Gate {
        Gate {
            state: Mutex::new(GateState {
                busy: 0,
                capacity,
                queue: VecDeque::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a slot, waiting in line for one if none is free.
    async fn enter(&self) -> Slot<'_> {
        let granted = {
            let mut state = self.lock();
            if state.busy < state.capacity {
                state.busy += 1;
                return Slot(self);
            }
            let (grant, granted) = oneshot::channel();
            state.queue.push_back(grant);
            granted
        };
        let mut waiting = Waiting {
            gate: self,
            granted: Some(granted),
        };
        let granted = waiting.granted.as_mut().expect("set above");
        granted
            .await
            .expect("a waiter's sender is only dropped by granting it a slot");
        waiting.granted = None;
        Slot(self)
    }

    /// Frees a slot and hands free slots to the head of the line.
    fn leave(&self) {
        let mut state = self.lock();
        state.busy -= 1;
        Self::hand_over(&mut state);
    }

    fn set_capacity(&self, capacity: u32) {
        let mut state = self.lock();
        state.capacity = capacity;
        Self::hand_over(&mut state);
    }

    fn capacity(&self) -> u32 {
        self.lock().capacity
    }

    fn hand_over(state: &mut GateState) {
        while state.busy < state.capacity {
            let Some(grant) = state.queue.pop_front() else {
                break;
            };
            // A waiter cancelled before this has closed its end: skip it.
            if grant.send(()).is_ok() {
                state.busy += 1;
            }
        }
    }
}

/// A slot of the gate, freed when dropped.
pub(crate) struct Slot<'a>(&'a Gate);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

/// A place in the gate's line. Dropped while waiting (the handler cancelled), it closes its end,
/// and gives back a slot that was handed to it in the meantime.
struct Waiting<'a> {
    gate: &'a Gate,
    granted: Option<oneshot::Receiver<()>>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Some(mut granted) = self.granted.take() {
            granted.close();
            if granted.try_recv().is_ok() {
                self.gate.leave();
            }
        }
    }
}
