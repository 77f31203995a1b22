//! Hand-written SVG plots over time: the document, its title and legend, and panels whose x axis
//! is seconds from a run's start.

use std::fmt::Write as _;

/// Opens a `width` × `height` document on a white background; [`close`] ends it.
pub fn open(width: f64, height: f64) -> String {
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="13">"##
    );
    let _ = writeln!(svg, r##"<rect width="100%" height="100%" fill="white"/>"##);
    svg
}

/// Ends a document begun with [`open`].
pub fn close(svg: &mut String) {
    svg.push_str("</svg>\n");
}

/// The plot's title, at `(x, y)`.
pub fn title(svg: &mut String, x: f64, y: f64, text: &str) {
    let _ = writeln!(
        svg,
        r##"<text x="{x}" y="{y}" font-size="15" font-weight="bold">{text}</text>"##
    );
}

/// How a line is drawn.
#[derive(Copy, Clone, Debug)]
pub struct Stroke<'a> {
    pub color: &'a str,
    pub width: f64,
    /// An SVG `stroke-dasharray` (`"5,4"`), or solid.
    pub dash: Option<&'a str>,
}

impl<'a> Stroke<'a> {
    /// A solid line 2 px wide.
    pub fn solid(color: &'a str) -> Self {
        Stroke {
            color,
            width: 2.0,
            dash: None,
        }
    }

    fn attributes(&self) -> String {
        let mut out = format!(r##"stroke="{}" stroke-width="{}""##, self.color, self.width);
        if let Some(dash) = self.dash {
            let _ = write!(out, r##" stroke-dasharray="{dash}""##);
        }
        out
    }
}

/// One legend entry whose sample line starts at `(x, y)`; the label follows it.
pub fn legend(svg: &mut String, x: f64, y: f64, stroke: Stroke<'_>, label: &str) {
    let attributes = Stroke {
        width: stroke.width.max(3.0),
        ..stroke
    }
    .attributes();
    let _ = writeln!(
        svg,
        r##"<line x1="{x}" y1="{y}" x2="{}" y2="{y}" {attributes}/><text x="{}" y="{}">{label}</text>"##,
        x + 24.0,
        x + 30.0,
        y + 4.0
    );
}

/// A panel: a framed plot area with value ticks on the left and a tick every whole second below.
pub struct Panel<'a> {
    pub left: f64,
    pub top: f64,
    pub width: f64,
    pub height: f64,
    /// The time at the right edge, in seconds (the left edge is 0).
    pub seconds: f64,
    pub title: &'a str,
    /// Value to y in [0, 1] (0 at the bottom); values outside are drawn at the edge.
    pub scale: &'a dyn Fn(f64) -> f64,
    pub ticks: &'a [(f64, &'a str)],
}

impl Panel<'_> {
    /// The x of time `t` (seconds).
    pub fn x(&self, t: f64) -> f64 {
        self.left + t / self.seconds * self.width
    }

    /// The y of value `v`.
    pub fn y(&self, v: f64) -> f64 {
        self.top + self.height * (1.0 - (self.scale)(v).clamp(0.0, 1.0))
    }

    /// The title, the frame, the value ticks with their grid lines, and the seconds.
    pub fn frame(&self, svg: &mut String) {
        let (left, top, width, height) = (self.left, self.top, self.width, self.height);
        let bottom = top + height;
        let _ = writeln!(
            svg,
            r##"<text x="{left}" y="{}" font-weight="bold">{}</text>"##,
            top - 8.0,
            self.title
        );
        let _ = writeln!(
            svg,
            r##"<rect x="{left}" y="{top}" width="{width}" height="{height}" fill="none" stroke="#888"/>"##,
        );
        for &(v, label) in self.ticks {
            let y = self.y(v);
            let _ = writeln!(
                svg,
                r##"<line x1="{left}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{label}</text>"##,
                left + width,
                left - 6.0,
                y + 4.0
            );
        }
        for s in 0..=self.seconds.floor() as u64 {
            let x = self.x(s as f64);
            let _ = writeln!(
                svg,
                r##"<line x1="{x:.1}" y1="{bottom}" x2="{x:.1}" y2="{:.1}" stroke="#888"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="11">{s} s</text>"##,
                bottom + 4.0,
                bottom + 16.0
            );
        }
    }

    /// A solid 2 px line through `points` (time in s, value); `None` values break it, and a
    /// piece of one point is a dot.
    pub fn line(&self, svg: &mut String, color: &str, points: &[(f64, Option<f64>)]) {
        self.stroke(svg, Stroke::solid(color), points);
    }

    /// As [`line`](Self::line), drawn with `stroke`.
    pub fn stroke(&self, svg: &mut String, stroke: Stroke<'_>, points: &[(f64, Option<f64>)]) {
        let mut segment = Vec::new();
        let flush = |segment: &mut Vec<(f64, f64)>, svg: &mut String| {
            if let [(x, y)] = segment[..] {
                let _ = writeln!(
                    svg,
                    r##"<circle cx="{x:.1}" cy="{y:.1}" r="2.5" fill="{}"/>"##,
                    stroke.color
                );
            } else if segment.len() > 1 {
                let points: Vec<String> = segment
                    .iter()
                    .map(|(x, y)| format!("{x:.1},{y:.1}"))
                    .collect();
                let _ = writeln!(
                    svg,
                    r##"<polyline fill="none" {} points="{}"/>"##,
                    stroke.attributes(),
                    points.join(" ")
                );
            }
            segment.clear();
        };
        for &(t, v) in points {
            match v {
                Some(v) => segment.push((self.x(t), self.y(v))),
                None => flush(&mut segment, svg),
            }
        }
        flush(&mut segment, svg);
    }

    /// A dashed green horizontal line at `v`, labelled at its right end.
    pub fn mark(&self, svg: &mut String, v: f64, label: &str) {
        let y = self.y(v);
        let _ = writeln!(
            svg,
            r##"<line x1="{}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#2ca02c" stroke-dasharray="5,4"/><text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11" fill="#2ca02c">{label}</text>"##,
            self.left,
            self.left + self.width,
            self.left + self.width - 4.0,
            y - 4.0
        );
    }
}
