//! The matrix: each scenario is a dependency (a latency shape and a capacity regime), its phases
//! and the loads offered to it; the plan is the scenarios a run goes through
//! (`AUTO_BENCH_QUICK`, `AUTO_BENCH_ONLY`).

use std::time::Duration;

use crate::dependency::Shape;

/// The slots of every pool (in its first phase), but the small ones.
pub(crate) const POOL_SLOTS: u32 = 20;
/// The slots of the small pools: each its own scenario, `pool-<n>-slots`.
pub(crate) const SMALL_POOLS: [u32; 3] = [1, 2, 4];
/// A small pool's learned limit, at most this many times its slots (its mean over the measured
/// window).
pub(crate) const SMALL_POOL_LIMIT_TIMES: f64 = 3.0;
/// The share of calls that fail at once in the fast-failure scenarios.
const FAIL_SHARE: f64 = 0.2;

const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Every third call (by a draw, p = 1/3) 400 ms, the others 5 ms.
const BIMODAL: Shape = Shape::Bimodal {
    slow: ms(400),
    fast: ms(5),
    p_slow: 1.0 / 3.0,
};

/// The dependency's capacity regime.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Regime {
    /// No gate: every call is served at once, its hold whatever the load.
    Unlimited,
    /// A fixed pool of slots.
    Pool,
    /// A pool whose slots halve mid-run and come back.
    Halving,
    /// A pool whose holds double mid-run, for good.
    Slowdown,
    /// A pool whose slots double mid-run, for good.
    Growing,
}

/// A stretch of a run with one state of the dependency; its figures are taken over the requests
/// scheduled from `measure_from` to `end` (what comes before is the allowance for adapting).
#[derive(Copy, Clone, Debug)]
pub(crate) struct Phase {
    pub(crate) name: &'static str,
    pub(crate) start: Duration,
    pub(crate) end: Duration,
    pub(crate) measure_from: Duration,
    /// The gate's slots (`None`: no gate).
    pub(crate) slots: Option<u32>,
    /// The factor on every hold.
    pub(crate) scale: f64,
}

impl Phase {
    /// The measured window.
    pub(crate) fn window(&self) -> (Duration, Duration) {
        (self.measure_from, self.end)
    }

    pub(crate) fn window_label(&self) -> String {
        format!(
            "{}–{} s",
            self.measure_from.as_secs_f64(),
            self.end.as_secs_f64()
        )
    }
}

/// An offered load: a rate, or a multiple of the first phase's capacity (of the calls that need
/// the dependency: failing calls take no slot, so the rate is that over the healthy share).
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum Load {
    PerSecond(f64),
    Times(f64),
}

/// The change of a scenario whose dependency changes mid-run: which phase starts with it, and
/// the bins its convergence is read in. The goal's allowance is what that phase leaves out of
/// its measured window.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Change {
    pub(crate) phase: usize,
    pub(crate) bin: Duration,
}

#[derive(Clone, Debug)]
pub(crate) struct Scenario {
    /// Its name in `AUTO_BENCH_ONLY` and in the tables.
    pub(crate) name: &'static str,
    pub(crate) regime: Regime,
    pub(crate) shape: Shape,
    pub(crate) fail_share: f64,
    pub(crate) phases: Vec<Phase>,
    pub(crate) loads: Vec<Load>,
    /// The load whose limits over time are plotted.
    pub(crate) plotted: Option<Load>,
    pub(crate) change: Option<Change>,
}

impl Scenario {
    /// The dependency's capacity in `phase`, calls per second: slots over the mean hold.
    pub(crate) fn capacity(&self, phase: &Phase) -> Option<f64> {
        phase
            .slots
            .map(|slots| f64::from(slots) / (self.shape.mean().as_secs_f64() * phase.scale))
    }

    /// The rate of arrivals of `load`.
    pub(crate) fn rate(&self, load: Load) -> f64 {
        match load {
            Load::PerSecond(rate) => rate,
            Load::Times(x) => {
                let capacity = self
                    .capacity(&self.phases[0])
                    .expect("a pool has a capacity");
                x * capacity / (1.0 - self.fail_share)
            }
        }
    }

    pub(crate) fn load_name(&self, load: Load) -> String {
        match load {
            Load::PerSecond(rate) => format!("{rate:.0} req/s"),
            Load::Times(x) => format!("{x}x ({:.0} req/s)", self.rate(load)),
        }
    }

    /// How long a run offers load.
    pub(crate) fn length(&self) -> Duration {
        self.phases.last().expect("a scenario has phases").end
    }

    /// The changed phase, and how long after the change its goal allows for adapting.
    pub(crate) fn changed(&self) -> Option<(Change, &Phase, Duration)> {
        let change = self.change?;
        let phase = &self.phases[change.phase];
        Some((change, phase, phase.measure_from - phase.start))
    }

    /// The state of the dependency at the start.
    pub(crate) fn first(&self) -> &Phase {
        &self.phases[0]
    }

    /// The slots of a small pool (goal (f)), `None` for the others.
    pub(crate) fn small_pool(&self) -> Option<u32> {
        let slots = self.first().slots?;
        (self.regime == Regime::Pool && SMALL_POOLS.contains(&slots)).then_some(slots)
    }

    /// Goal (b) applies: an overloaded pool (2x to 5x) of constant or mixed holds.
    pub(crate) fn overload_goal(&self, load: Load) -> bool {
        let even_or_mixed = matches!(self.shape, Shape::Constant(_) | Shape::Bimodal { .. });
        let overloaded = matches!(load, Load::Times(x) if (2.0..=5.0).contains(&x));
        self.regime != Regime::Unlimited && even_or_mixed && overloaded
    }

    /// One line on the dependency, for the scenarios table.
    pub(crate) fn dependency(&self) -> String {
        let mut out = self.shape.describe();
        if self.fail_share > 0.0 {
            out += &format!(
                "; {:.0}% of calls fail at once (502, no slot taken)",
                100.0 * self.fail_share
            );
        }
        out
    }

    /// The phases, for the scenarios table: capacity and measured window of each.
    pub(crate) fn phases_label(&self) -> String {
        self.phases
            .iter()
            .map(|p| {
                let state = match (p.slots, self.capacity(p)) {
                    (Some(slots), Some(capacity)) => format!(
                        "{slots} slots{}, {capacity:.0}/s",
                        if p.scale == 1.0 {
                            String::new()
                        } else {
                            format!(", holds x{}", p.scale)
                        }
                    ),
                    _ => "no limit".into(),
                };
                format!(
                    "{} {}–{} s ({state}; measured {})",
                    p.name,
                    p.start.as_secs_f64(),
                    p.end.as_secs_f64(),
                    p.window_label()
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The scenarios, with every time multiplied by `k` (1, or 0.5 for `AUTO_BENCH_QUICK`), and the
/// loads of a quick run when `quick`.
fn matrix(k: f64, quick: bool) -> Vec<Scenario> {
    let s = |seconds: f64| Duration::from_secs_f64(seconds * k);
    let phase = |name, start, end, allowance, slots, scale| Phase {
        name,
        start: s(start),
        end: s(end),
        measure_from: s(start + allowance),
        slots,
        scale,
    };
    let steady = |slots| vec![phase("steady", 0.0, 8.0, 1.0, slots, 1.0)];
    let pool = Some(POOL_SLOTS);
    let loads = |all: &[Load], quick_ones: &[Load]| {
        if quick {
            quick_ones.to_vec()
        } else {
            all.to_vec()
        }
    };
    let per_second = Load::PerSecond(500.0);
    let base = |name, regime, shape, phases| Scenario {
        name,
        regime,
        shape,
        fail_share: 0.0,
        phases,
        loads: vec![per_second],
        plotted: None,
        change: None,
    };
    let unlimited = |name, shape| base(name, Regime::Unlimited, shape, steady(None));
    let pooled = |name, shape, load: &[Load], quick_load: &[Load]| Scenario {
        loads: loads(load, quick_load),
        ..base(name, Regime::Pool, shape, steady(pool))
    };
    let lognormal = |median| Shape::LogNormal { median, sigma: 1.0 };
    let hundred = Shape::Constant(ms(100));
    let (x2, x3, x5) = (Load::Times(2.0), Load::Times(3.0), Load::Times(5.0));
    // A pool of a few slots held 100 ms, at one load.
    let small = |name, slots, load| Scenario {
        loads: vec![load],
        ..base(name, Regime::Pool, hundred, steady(Some(slots)))
    };
    vec![
        unlimited("nocap-constant", Shape::Constant(ms(20))),
        Scenario {
            plotted: Some(per_second),
            ..unlimited("nocap-bimodal", BIMODAL)
        },
        Scenario {
            loads: loads(&[Load::PerSecond(100.0), per_second], &[per_second]),
            ..unlimited("nocap-lognormal", lognormal(ms(10)))
        },
        unlimited(
            "nocap-pareto",
            Shape::Pareto {
                xm: ms(5),
                alpha: 1.5,
                cap: ms(2000),
            },
        ),
        Scenario {
            fail_share: FAIL_SHARE,
            plotted: Some(per_second),
            ..unlimited("nocap-failing", lognormal(ms(10)))
        },
        pooled("pool-constant", hundred, &[Load::Times(0.5), x2, x5], &[x2]),
        Scenario {
            plotted: Some(x5),
            ..pooled("pool-bimodal", BIMODAL, &[x2, x3, x5], &[x3, x5])
        },
        small("pool-1-slot", SMALL_POOLS[0], x5),
        small("pool-2-slots", SMALL_POOLS[1], x5),
        small("pool-4-slots", SMALL_POOLS[2], x3),
        pooled("pool-lognormal", lognormal(ms(50)), &[x3], &[x3]),
        Scenario {
            phases: vec![
                phase("A", 0.0, 4.0, 1.0, pool, 1.0),
                phase("B", 4.0, 8.0, 2.0, Some(POOL_SLOTS / 2), 1.0),
                phase("C", 8.0, 11.0, 1.0, pool, 1.0),
            ],
            loads: loads(&[x2, x5], &[x5]),
            plotted: Some(x5),
            // 5 holds: the slots left after the halving answer in step (see the header).
            change: Some(Change {
                phase: 1,
                bin: ms(500),
            }),
            ..base("pool-halving", Regime::Halving, hundred, Vec::new())
        },
        Scenario {
            phases: vec![
                phase("A", 0.0, 4.0, 1.0, pool, 1.0),
                phase("B", 4.0, 10.0, 3.0, pool, 2.0),
            ],
            loads: vec![x2],
            plotted: Some(x2),
            // 2 of the slowed holds.
            change: Some(Change {
                phase: 1,
                bin: ms(400),
            }),
            ..base("pool-slowdown", Regime::Slowdown, hundred, Vec::new())
        },
        Scenario {
            fail_share: FAIL_SHARE,
            plotted: Some(x2),
            ..pooled("pool-failing", hundred, &[x2], &[x2])
        },
        Scenario {
            phases: vec![
                phase("A", 0.0, 4.0, 1.0, Some(POOL_SLOTS / 2), 1.0),
                phase("B", 4.0, 10.0, 2.0, pool, 1.0),
            ],
            // 4x the first phase's capacity, 2x the grown one's.
            loads: vec![Load::Times(4.0)],
            plotted: Some(Load::Times(4.0)),
            // 5 holds, as after a halving.
            change: Some(Change {
                phase: 1,
                bin: ms(500),
            }),
            ..base("pool-growing", Regime::Growing, hundred, Vec::new())
        },
    ]
}

/// The scenarios a run goes through.
pub(crate) struct Plan {
    pub(crate) scenarios: Vec<Scenario>,
    pub(crate) quick: bool,
    /// `AUTO_BENCH_ONLY`, as given.
    pub(crate) only: Option<String>,
}

impl Plan {
    /// `AUTO_BENCH_QUICK=1`: every time halved, fewer loads. `AUTO_BENCH_ONLY=a,b`: those
    /// scenarios alone (an unknown name stops the run with the list of names).
    pub(crate) fn from_env() -> Plan {
        let quick = std::env::var("AUTO_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
        let mut scenarios = matrix(if quick { 0.5 } else { 1.0 }, quick);
        let only = std::env::var("AUTO_BENCH_ONLY")
            .ok()
            .filter(|v| !v.trim().is_empty());
        if let Some(only) = &only {
            let names: Vec<&str> = only.split(',').map(str::trim).collect();
            for name in &names {
                if !scenarios.iter().any(|s| s.name == *name) {
                    let all: Vec<&str> = scenarios.iter().map(|s| s.name).collect();
                    panic!(
                        "AUTO_BENCH_ONLY: no scenario `{name}`; the scenarios are {}",
                        all.join(", ")
                    );
                }
            }
            scenarios.retain(|s| names.contains(&s.name));
        }
        Plan {
            scenarios,
            quick,
            only,
        }
    }

    /// The full run alone writes the README and `benches/out`.
    pub(crate) fn publishes(&self) -> bool {
        !self.quick && self.only.is_none()
    }

    /// The runs of a full plan's scenario and load (one fresh `ours auto` guard each).
    pub(crate) fn full_pairs() -> usize {
        matrix(1.0, false).iter().map(|s| s.loads.len()).sum()
    }
}
