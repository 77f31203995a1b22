//! The limits over time, one panel per plotted scenario: ours, tower-acc's best, `fixed`, ours'
//! handlers in flight, and the dependency's slots (hand-written SVG, `common::svg`).

use std::fmt::Write as _;

use crate::common::svg::{self, Panel, Stroke};
use crate::figures::{acc_best, LoadRuns, ScenarioRuns};
use crate::run::Run;
use crate::scenario::Scenario;
use crate::server::Contender;

const PLOT_W: f64 = 760.0;
const PANEL_H: f64 = 200.0;
const LEFT: f64 = 70.0;
const TOP: f64 = 90.0;
const GAP: f64 = 70.0;
const SLOTS_STROKE: Stroke<'static> = Stroke {
    color: "#555",
    width: 2.0,
    dash: Some("6,4"),
};
const PHASE_STROKE: Stroke<'static> = Stroke {
    color: "#999",
    width: 1.0,
    dash: Some("2,3"),
};
const FIXED_COLOR: &str = "#ff7f0e";
const ACC_COLOR: &str = "#2ca02c";
const OURS_COLOR: &str = "#1f77b4";
const IN_FLIGHT_STROKE: Stroke<'static> = Stroke {
    color: "#9ecae1",
    width: 1.5,
    dash: None,
};

/// One panel's runs.
struct PanelRuns<'a> {
    scenario: &'a Scenario,
    runs: &'a LoadRuns,
    ours: &'a Run,
    acc_best: Option<&'a Run>,
    fixed: &'a Run,
}

type Points = Vec<(f64, Option<f64>)>;

fn limit_points(run: &Run, end: f64) -> Points {
    run.samples
        .iter()
        .filter(|s| s.at.as_secs_f64() <= end)
        .map(|s| (s.at.as_secs_f64(), s.limit.map(f64::from)))
        .collect()
}

fn in_flight_points(run: &Run, end: f64) -> Points {
    run.samples
        .iter()
        .filter(|s| s.at.as_secs_f64() <= end)
        .map(|s| (s.at.as_secs_f64(), Some(s.in_flight as f64)))
        .collect()
}

/// The gate's slots as a step line (a vertical at each change); empty without a gate.
fn slots_points(run: &Run, end: f64) -> Points {
    let mut points = Vec::new();
    let mut previous = None;
    for s in run.samples.iter().filter(|s| s.at.as_secs_f64() <= end) {
        let (t, Some(slots)) = (s.at.as_secs_f64(), s.slots.map(f64::from)) else {
            continue;
        };
        if let Some(before) = previous.filter(|&b| b != slots) {
            points.push((t, Some(before)));
        }
        points.push((t, Some(slots)));
        previous = Some(slots);
    }
    points
}

/// A dotted vertical line where each phase after the first starts, its name at the foot.
fn phase_marks(svg: &mut String, panel: &Panel<'_>, scenario: &Scenario) {
    for phase in &scenario.phases[1..] {
        let x = panel.x(phase.start.as_secs_f64());
        let (top, bottom) = (panel.top, panel.top + panel.height);
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{bottom}" stroke="{}" stroke-dasharray="{}"/><text x="{:.1}" y="{:.1}" font-size="11" fill="#666">{}</text>"##,
            PHASE_STROKE.color,
            PHASE_STROKE.dash.unwrap_or_default(),
            x + 4.0,
            bottom - 5.0,
            phase.name
        );
    }
}

/// A round tick step giving at most 6 ticks up to `top`.
fn tick_step(top: f64) -> f64 {
    let mut step = 1.0;
    loop {
        for m in [1.0, 2.0, 5.0] {
            if top / (step * m) <= 6.0 {
                return step * m;
            }
        }
        step *= 10.0;
    }
}

/// The plot of the panels of `results` that ran, or `None` if none did.
pub(crate) fn plot(results: &[ScenarioRuns<'_>]) -> Option<String> {
    let panels: Vec<PanelRuns<'_>> = results
        .iter()
        .filter_map(|r| {
            let load = r.scenario.plotted?;
            let runs = r.loads.iter().find(|l| l.load == load)?;
            let phases: Vec<_> = r.scenario.phases.iter().collect();
            Some(PanelRuns {
                scenario: r.scenario,
                runs,
                ours: runs.find(Contender::OursAuto),
                acc_best: acc_best(r.scenario, runs, &phases),
                fixed: runs.find(Contender::Fixed),
            })
        })
        .collect();
    if panels.is_empty() {
        return None;
    }
    let height = TOP + panels.len() as f64 * (PANEL_H + GAP);
    let mut svg = svg::open(LEFT + PLOT_W + 30.0, height);
    svg::title(
        &mut svg,
        LEFT,
        22.0,
        "In-flight limits over time, one run per panel",
    );
    let ours_readable = panels
        .iter()
        .any(|p| p.ours.samples.iter().any(|s| s.limit.is_some()));
    let legend = [
        (SLOTS_STROKE, "the dependency's slots (pools)"),
        (
            Stroke::solid(OURS_COLOR),
            if ours_readable {
                "ours auto: limit"
            } else {
                "ours auto: limit (not readable: no guard of that name)"
            },
        ),
        (Stroke::solid(FIXED_COLOR), "fixed: limit"),
        (IN_FLIGHT_STROKE, "ours auto: handlers in flight"),
        (
            Stroke::solid(ACC_COLOR),
            "tower-acc's best in the run: limit",
        ),
        (PHASE_STROKE, "a phase starts"),
    ];
    for (i, (stroke, label)) in legend.iter().enumerate() {
        let (x, y) = (LEFT + (i % 2) as f64 * 380.0, 44.0 + (i / 2) as f64 * 18.0);
        svg::legend(&mut svg, x, y, *stroke, label);
    }
    for (i, p) in panels.iter().enumerate() {
        panel(&mut svg, p, TOP + 20.0 + i as f64 * (PANEL_H + GAP));
    }
    svg::close(&mut svg);
    Some(svg)
}

fn panel(svg: &mut String, p: &PanelRuns<'_>, top: f64) {
    let end = p.scenario.length().as_secs_f64();
    let ours = limit_points(p.ours, end);
    let fixed = limit_points(p.fixed, end);
    let acc = p.acc_best.map(|r| limit_points(r, end));
    let in_flight = in_flight_points(p.ours, end);
    let slots = slots_points(p.ours, end);
    // The y axis: up to the highest value plotted, at most 3x `fixed`'s limit (higher values are
    // drawn at the top edge).
    let highest = [&ours, &fixed, &in_flight, &slots]
        .into_iter()
        .chain(acc.as_ref())
        .flat_map(|points| points.iter().filter_map(|(_, v)| *v))
        .fold(1.0, f64::max);
    let reference = f64::from(p.fixed.fixed_limit.unwrap_or(1));
    let ceiling = (highest * 1.1).min(3.0 * reference).max(reference * 1.2);
    let step = tick_step(ceiling);
    let y_top = (ceiling / step).ceil() * step;
    let labels: Vec<(f64, String)> = (0..=(y_top / step) as u32)
        .map(|i| f64::from(i) * step)
        .map(|v| (v, format!("{v:.0}")))
        .collect();
    let ticks: Vec<(f64, &str)> = labels.iter().map(|(v, l)| (*v, l.as_str())).collect();
    let title = format!(
        "{}, {}{}{}",
        p.scenario.name,
        p.scenario.load_name(p.runs.load),
        p.acc_best.map_or(String::new(), |r| format!(
            "; tower-acc's best: {}",
            r.contender.name().trim_start_matches("tower-acc ")
        )),
        if highest > y_top {
            format!(" (y clipped at {y_top:.0})")
        } else {
            String::new()
        },
    );
    let scale = move |v: f64| v / y_top;
    let panel = Panel {
        left: LEFT,
        top,
        width: PLOT_W,
        height: PANEL_H,
        seconds: end,
        title: &title,
        scale: &scale,
        ticks: &ticks,
    };
    panel.frame(svg);
    phase_marks(svg, &panel, p.scenario);
    panel.stroke(svg, IN_FLIGHT_STROKE, &in_flight);
    panel.line(svg, FIXED_COLOR, &fixed);
    if let Some(acc) = &acc {
        panel.line(svg, ACC_COLOR, acc);
    }
    panel.line(svg, OURS_COLOR, &ours);
    panel.stroke(svg, SLOTS_STROKE, &slots);
}
