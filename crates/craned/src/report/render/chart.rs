//! The report's usage charts: inline SVG, one line (and min–max band) per pod, with
//! horizontal reference lines and axes in cores or bytes.

use std::fmt::Write as _;

use k8s_openapi::jiff::Timestamp;

use super::esc;
use crate::report::model::PodSeries;

/// What a chart's axis shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Cores,
    Bytes,
}

/// An axis label: cores as `250m` / `1.5`, bytes as `512Mi` / `1.5Gi`.
pub fn axis_label(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Cores => {
            if v == 0.0 {
                "0".into()
            } else if v < 1.0 {
                format!("{}m", (v * 1000.0).round())
            } else {
                trim_float(v)
            }
        }
        Unit::Bytes => {
            const UNITS: [(&str, f64); 4] = [
                ("Ti", 1099511627776.0),
                ("Gi", 1073741824.0),
                ("Mi", 1048576.0),
                ("Ki", 1024.0),
            ];
            for (suffix, size) in UNITS {
                if v >= size {
                    return format!("{}{suffix}", trim_float(v / size));
                }
            }
            format!("{}", v.round())
        }
    }
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A round step near `raw` (1, 2 or 5 × 10^n; × 2^10n for bytes would be prettier but decimal
/// steps keep the ticks evenly spaced on the axis).
pub fn nice_step(raw: f64) -> f64 {
    if !(raw > 0.0 && raw.is_finite()) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// The tick step of an axis: a round number of cores, or a round number of KiB/MiB/GiB/TiB.
pub fn axis_step(raw: f64, unit: Unit) -> f64 {
    if unit == Unit::Bytes {
        for size in [1099511627776.0, 1073741824.0, 1048576.0, 1024.0] {
            if raw >= size {
                return nice_step(raw / size) * size;
            }
        }
    }
    nice_step(raw)
}

/// A horizontal reference line on a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct RefLine {
    pub label: String,
    pub value: f64,
    /// CSS class (`pct`, `rec`, `cur`).
    pub class: &'static str,
}

/// Chart size and the margins around the plot, in SVG user units.
const W: f64 = 760.0;
pub(super) const H: f64 = 230.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 150.0;
pub(super) const TOP: f64 = 10.0;
pub(super) const BOTTOM: f64 = 26.0;

fn fmt_time(t: i64, with_day: bool) -> String {
    let Ok(ts) = Timestamp::from_second(t) else {
        return String::new();
    };
    if with_day {
        ts.strftime("%b %d").to_string()
    } else {
        ts.strftime("%H:%M").to_string()
    }
}

/// An inline SVG line chart of each pod's series over `[start, end]`, with reference lines.
pub fn svg_chart(
    title: &str,
    series: &[PodSeries],
    lines: &[RefLine],
    unit: Unit,
    start: i64,
    end: i64,
) -> String {
    let end = end.max(start + 1);
    let data_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.value))
        .chain(lines.iter().map(|l| l.value))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let step = axis_step(data_max * 1.1 / 4.0, unit);
    let y_max = ((data_max * 1.1 / step).ceil() * step).max(step);
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let x = |t: i64| LEFT + (t - start) as f64 / (end - start) as f64 * pw;
    let y = |v: f64| TOP + ph - (v / y_max).clamp(0.0, 1.05) * ph;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" aria-label="{}">"#,
        esc(title)
    );
    // Grid and y axis.
    let mut v = 0.0;
    while v <= y_max + step / 2.0 {
        let yy = y(v);
        let _ = write!(
            s,
            r#"<line class="grid" x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT + pw,
            LEFT - 6.0,
            yy + 4.0,
            esc(&axis_label(v, unit))
        );
        v += step;
    }
    // X ticks: midnights for multi-day spans, else every few hours.
    let span = end - start;
    let (tick, with_day) = if span >= 2 * 86_400 {
        (86_400 * (span / (8 * 86_400)).max(1), true)
    } else if span >= 6 * 3600 {
        (3 * 3600, false)
    } else {
        (3600, false)
    };
    let mut t = start - start.rem_euclid(tick) + tick;
    while t < end {
        let xx = x(t);
        let _ = write!(
            s,
            r#"<line class="grid" x1="{xx:.1}" y1="{TOP}" x2="{xx:.1}" y2="{:.1}"/><text class="tick" x="{xx:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            TOP + ph,
            H - 8.0,
            fmt_time(t, with_day)
        );
        t += tick;
    }
    // Usage, one polyline per pod.
    for (i, p) in series.iter().enumerate() {
        if p.points.is_empty() {
            continue;
        }
        let mut pts = String::with_capacity(p.points.len() * 12);
        for q in &p.points {
            if q.value.is_finite() {
                let _ = write!(pts, "{:.1},{:.1} ", x(q.timestamp), y(q.value));
            }
        }
        // The band between each slice's minimum and maximum shows where usage spends its time;
        // the line on its top edge shows the peaks.
        if p.lows.len() == p.points.len() {
            let mut band = pts.clone();
            for q in p.lows.iter().rev() {
                if q.value.is_finite() {
                    let _ = write!(band, "{:.1},{:.1} ", x(q.timestamp), y(q.value));
                }
            }
            let _ = write!(
                s,
                r#"<polygon class="band u{}" points="{}"/>"#,
                i % 6,
                band.trim_end()
            );
        }
        let _ = write!(
            s,
            r#"<polyline class="usage u{}" points="{}"><title>{}</title></polyline>"#,
            i % 6,
            pts.trim_end(),
            esc(&p.pod)
        );
    }
    // Reference lines, labelled in the right margin.
    let mut last_label_y = f64::NEG_INFINITY;
    let mut sorted: Vec<&RefLine> = lines.iter().filter(|l| l.value.is_finite()).collect();
    sorted.sort_by(|a, b| b.value.total_cmp(&a.value));
    for l in sorted {
        let yy = y(l.value);
        // Keep labels of close lines from overlapping.
        let ly = if yy - last_label_y < 13.0 {
            last_label_y + 13.0
        } else {
            yy
        };
        last_label_y = ly;
        let _ = write!(
            s,
            r#"<line class="ref {}" x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}"/><text class="reflabel {}" x="{:.1}" y="{:.1}">{} {}</text>"#,
            l.class,
            LEFT + pw,
            l.class,
            LEFT + pw + 6.0,
            ly + 4.0,
            esc(&l.label),
            esc(&axis_label(l.value, unit))
        );
    }
    if series.iter().all(|p| p.points.is_empty()) {
        let _ = write!(
            s,
            r#"<text class="empty" x="{:.1}" y="{:.1}" text-anchor="middle">no usage history</text>"#,
            LEFT + pw / 2.0,
            TOP + ph / 2.0
        );
    }
    s.push_str("</svg>");
    s
}
