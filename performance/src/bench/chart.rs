//! The Performance page's charts, drawn as SVG from the runs: the time to
//! converge at each size, and CPU time and peak RSS against the Foos.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::stats::{Spread, Stats, stats};
use super::{Conditions, Results, Subject};

/// The colour of a subject in the charts.
pub(super) fn colour(subject: Subject) -> &'static str {
    match subject {
        Subject::Go => "#4e79a7",
        Subject::Step7 | Subject::Step7Flow => "#e15759",
        Subject::Step8 | Subject::Step8Flow => "#59a14f",
        Subject::FloorWorkers => "#b07aa1",
        Subject::BareClient => "#9c9c9c",
    }
}

/// A horizontal bar chart of convergence times, as SVG: each bar the
/// median, its whisker the lowest and highest run that converged. Each size
/// has its own scale, its slowest run the full width: Go's rate limit makes
/// its time at 2,000 Foos a hundred times step 8's at 100.
pub(super) fn chart(sizes: &[usize], results: &Results, conditions: &Conditions) -> String {
    let stats = stats(results);
    let (left, width, bar_height, gap) = (230.0, 400.0, 18.0, 6.0);
    let mut y = 30.0;
    let mut body = String::new();
    for &n in sizes {
        let limit = conditions.limit(n);
        let max = results
            .iter()
            .filter(|((size, _), _)| *size == n)
            .flat_map(|(_, runs)| runs.iter())
            .map(|m| m.converge.as_secs_f64())
            .fold(1.0, f64::max);
        let _ = writeln!(
            body,
            r#"<text x="10" y="{y}" font-weight="bold">{n} Foos</text><text x="{left}" y="{y}" font-size="11">full width: {max:.0} s</text>"#
        );
        y += 10.0;
        for subject in Subject::TABLE {
            let Some(s) = stats.get(&(n, subject)) else {
                continue;
            };
            let x = |secs: f64| left + (secs.min(max) / max * width).max(1.0);
            let _ = writeln!(
                body,
                r#"<text x="10" y="{}">{}</text>"#,
                y + bar_height - 5.0,
                subject.label()
            );
            let (end, label) = match s.converged() {
                Some(secs) => (x(secs), format!("{secs:.1} s")),
                None => (x(max), format!("over {} s", limit.as_secs())),
            };
            let _ = writeln!(
                body,
                r#"<rect x="{left}" y="{y}" width="{:.1}" height="{bar_height}" fill="{}"/>"#,
                end - left,
                colour(subject)
            );
            let mut label_x = end;
            if let Some(c) = s.converge.filter(|c| c.runs > 1 && c.low.is_finite()) {
                let (a, b) = (x(c.low), x(c.high));
                let middle = y + bar_height / 2.0;
                let _ = writeln!(
                    body,
                    r#"<path d="M{a:.1} {middle}H{b:.1}M{a:.1} {:.1}V{:.1}M{b:.1} {:.1}V{:.1}" stroke="black" fill="none"/>"#,
                    middle - 4.0,
                    middle + 4.0,
                    middle - 4.0,
                    middle + 4.0
                );
                label_x = label_x.max(b);
            }
            let note = if s.unconverged > 0 {
                format!(" ({} not converged)", s.unconverged)
            } else {
                String::new()
            };
            let _ = writeln!(
                body,
                r#"<text x="{:.1}" y="{}">{label}{note}</text>"#,
                label_x + 6.0,
                y + bar_height - 5.0
            );
            y += bar_height + gap;
        }
        y += 14.0;
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"760\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"13\">\n\
         <title>Time until every Deployment exists and every Foo has a status: median bar, lowest and highest run as whisker</title>\n{body}</svg>\n",
        h = y + 10.0
    )
}

/// A step for an axis from 0 to at least `highest`, 1, 2 or 5 times a power
/// of ten, and how many steps: four or five ticks with round values.
pub(super) fn axis(highest: f64) -> (f64, u32) {
    if highest <= 0.0 {
        return (1.0, 1);
    }
    let rough = highest / 4.0;
    let magnitude = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|step| *step >= rough)
        .unwrap_or(10.0 * magnitude);
    (step, (highest / step).ceil() as u32)
}

/// Two line charts, as SVG: each subject's median CPU time and peak RSS
/// against the number of Foos, a point per size, with the slope per 100
/// Foos beside the line's end.
pub(super) fn cost_chart(sizes: &[usize], results: &Results) -> String {
    let stats = stats(results);
    let largest = sizes.iter().copied().max().unwrap_or(1).max(1) as f64;
    let (panel_width, panel_height, first_top, left, gap) = (300.0, 200.0, 40.0, 50.0, 75.0);
    let label_width = 260.0;
    let mut body = String::new();
    let panels: [Panel; 2] = [
        (
            "CPU time to converge",
            "s",
            |s| s.cpu,
            |growth| format!("{:.0} ms", growth * 1000.0),
        ),
        (
            "Peak RSS",
            "MiB",
            |s| s.rss,
            |growth| format!("{growth:.2} MiB"),
        ),
    ];
    for (i, panel) in panels.into_iter().enumerate() {
        // The panels one above the other, so that each is legible in a page's column.
        let frame = Frame {
            left,
            top: first_top + i as f64 * (panel_height + gap),
            width: panel_width,
            height: panel_height,
            largest,
        };
        cost_panel(&mut body, &frame, sizes, &stats, panel);
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"13\">\n\
         <title>CPU time from the Foos' creation to convergence, and peak RSS, against the number of Foos: medians, with the growth per 100 Foos along the last segment</title>\n{body}</svg>\n",
        w = panel_width + left + label_width,
        h = first_top + 2.0 * panel_height + gap + 30.0
    )
}

/// A panel of the cost chart: its title, unit, the measure it draws, and how
/// a growth per 100 Foos is shown.
type Panel = (
    &'static str,
    &'static str,
    fn(&Stats) -> Option<Spread>,
    fn(f64) -> String,
);

/// Where a panel is drawn: its left and top edges, its size, and the
/// number of Foos its x axis ends at.
struct Frame {
    left: f64,
    top: f64,
    width: f64,
    height: f64,
    largest: f64,
}

/// One panel of the cost chart into `body`: its axes, a line per subject,
/// and the labels at the lines' ends with their growth per 100 Foos.
fn cost_panel(
    body: &mut String,
    frame: &Frame,
    sizes: &[usize],
    stats: &BTreeMap<(usize, Subject), Stats>,
    (title, unit, measure, growth_shown): Panel,
) {
    let points: Vec<(Subject, Vec<(f64, f64)>)> = Subject::TABLE
        .into_iter()
        .map(|subject| {
            let line = sizes
                .iter()
                .filter_map(|&n| {
                    let value = measure(stats.get(&(n, subject))?)?.mid;
                    Some((n as f64, value))
                })
                .collect();
            (subject, line)
        })
        .filter(|(_, line): &(Subject, Vec<(f64, f64)>)| !line.is_empty())
        .collect();
    let (step, ticks) = axis(
        points
            .iter()
            .flat_map(|(_, line)| line.iter().map(|p| p.1))
            .fold(0.0, f64::max),
    );
    let scale = Scale {
        frame,
        highest: step * ticks as f64,
    };
    panel_axes(
        body,
        &scale,
        &format!("{title} ({unit})"),
        (step, ticks),
        sizes,
    );
    panel_lines(body, &scale, &points, growth_shown);
}

/// A panel's coordinates: Foos along x up to the frame's largest, the
/// measure along y up to `highest`.
struct Scale<'a> {
    frame: &'a Frame,
    highest: f64,
}

impl Scale<'_> {
    fn x(&self, n: f64) -> f64 {
        self.frame.left + n / self.frame.largest * self.frame.width
    }

    fn y(&self, v: f64) -> f64 {
        self.frame.top + self.frame.height - v / self.highest * self.frame.height
    }
}

/// A panel's title, its axes, the measure's ticks (`step` apart, `ticks`
/// of them) and the sizes along x.
fn panel_axes(
    body: &mut String,
    scale: &Scale<'_>,
    title: &str,
    (step, ticks): (f64, u32),
    sizes: &[usize],
) {
    let Frame {
        left: x0,
        top,
        width: panel_width,
        height: panel_height,
        ..
    } = *scale.frame;
    let _ = writeln!(
        body,
        r#"<text x="{x0}" y="{:.1}" font-weight="bold">{title} against Foos</text>"#,
        top - 20.0
    );
    let _ = writeln!(
        body,
        r#"<path d="M{x0} {top}V{bottom}H{right}" stroke="black" fill="none"/>"#,
        bottom = top + panel_height,
        right = x0 + panel_width
    );
    let decimals = if step < 1.0 { 1 } else { 0 };
    for tick in 0..=ticks {
        let value = step * tick as f64;
        let _ = writeln!(
            body,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{value:.decimals$}</text>"#,
            x0 - 4.0,
            scale.y(value) + 4.0
        );
    }
    for &n in sizes {
        let _ = writeln!(
            body,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11">{n}</text>"#,
            scale.x(n as f64),
            top + panel_height + 15.0
        );
    }
}

/// A line per subject with its points, and the labels at the right, one
/// per line in the order of the lines' ends, each with the growth along the
/// last segment (where the line is heading).
fn panel_lines(
    body: &mut String,
    scale: &Scale<'_>,
    points: &[(Subject, Vec<(f64, f64)>)],
    growth_shown: fn(f64) -> String,
) {
    let mut ends: Vec<(f64, Subject, String)> = Vec::new();
    for (subject, line) in points {
        let path: Vec<String> = line
            .iter()
            .map(|&(n, v)| format!("{:.1},{:.1}", scale.x(n), scale.y(v)))
            .collect();
        let _ = writeln!(
            body,
            r#"<polyline points="{}" stroke="{c}" stroke-width="2" fill="none"/>"#,
            path.join(" "),
            c = colour(*subject)
        );
        for &(n, v) in line {
            let _ = writeln!(
                body,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}"/>"#,
                scale.x(n),
                scale.y(v),
                colour(*subject)
            );
        }
        let last = line[line.len() - 1];
        let per_100 = match line.len().checked_sub(2).map(|i| line[i]) {
            Some(before) if last.0 > before.0 => {
                let growth = (last.1 - before.1) / (last.0 - before.0) * 100.0;
                format!(": {} per 100 from {:.0}", growth_shown(growth), before.0)
            }
            _ => String::new(),
        };
        ends.push((
            scale.y(last.1),
            *subject,
            format!("{}{per_100}", subject.short()),
        ));
    }
    ends.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut next_free = scale.frame.top;
    for (end_y, subject, text) in ends {
        let label_y = end_y.max(next_free) + 4.0;
        next_free = label_y + 9.0;
        let _ = writeln!(
            body,
            r#"<text x="{:.1}" y="{label_y:.1}" font-size="11" fill="{}">{text}</text>"#,
            scale.frame.left + scale.frame.width + 6.0,
            colour(subject)
        );
    }
}
