//! The report's four formats. Pure: a [`Report`] in, text out.

use std::fmt::Write as _;

use k8s_openapi::jiff::Timestamp;

use super::model::{ContainerReport, PodSeries, Report, WorkloadReport};

/// The output formats of `craned recommend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
    Html,
}

pub fn render(report: &Report, format: Format) -> String {
    match format {
        Format::Table => table(report),
        Format::Json => json(report),
        Format::Csv => csv(report),
        Format::Html => html(report),
    }
}

/// `+12%`, `-31%`, `=` when equal, empty when either side is missing or current is zero.
pub fn change(current: Option<i64>, recommended: Option<i64>) -> String {
    match (current, recommended) {
        (Some(c), Some(r)) if c > 0 => {
            if c == r {
                "=".into()
            } else {
                let pct = (r - c) as f64 * 100.0 / c as f64;
                format!("{:+.0}%", pct)
            }
        }
        _ => String::new(),
    }
}

fn opt(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("-")
}

fn with_change(current: Option<i64>, rec: Option<i64>, text: &Option<String>) -> String {
    let c = change(current, rec);
    if c.is_empty() || text.is_none() {
        opt(text).to_string()
    } else {
        format!("{} ({c})", opt(text))
    }
}

fn note(c: &ContainerReport) -> String {
    let mut parts = Vec::new();
    if c.oom_protected {
        parts.push("memory raised after an OOM kill".to_string());
    }
    if let Some(e) = &c.error {
        parts.push(e.clone());
    }
    parts.join("; ")
}

fn replicas_cells(w: &WorkloadReport) -> (String, String) {
    match &w.replicas {
        None => (String::new(), String::new()),
        Some(r) => (
            r.current
                .map(|v| v.to_string())
                .unwrap_or_else(|| "-".into()),
            match (r.recommended, &r.error) {
                (Some(v), _) => v.to_string(),
                (None, Some(_)) => "-".into(),
                (None, None) => "-".into(),
            },
        ),
    }
}

/// Aligned columns, one line per container; a workload's replicas on its first line.
pub fn table(report: &Report) -> String {
    let header = [
        "NAMESPACE",
        "KIND",
        "NAME",
        "CONTAINER",
        "CPU REQUEST",
        "CPU RECOMMENDED",
        "MEMORY REQUEST",
        "MEMORY RECOMMENDED",
        "REPLICAS",
        "RECOMMENDED",
        "NOTE",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for w in &report.workloads {
        let (rep_cur, rep_rec) = replicas_cells(w);
        let replicas_note = w
            .replicas
            .as_ref()
            .and_then(|r| r.error.as_ref())
            .map(|e| format!("replicas: {e}"));
        if w.containers.is_empty() {
            rows.push(vec![
                w.namespace.clone(),
                w.kind.clone(),
                w.name.clone(),
                "-".into(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                rep_cur.clone(),
                rep_rec.clone(),
                replicas_note.clone().unwrap_or_default(),
            ]);
        }
        for (i, c) in w.containers.iter().enumerate() {
            let rec = c.recommended.clone().unwrap_or_default();
            let mut n = note(c);
            if i == 0
                && let Some(r) = &replicas_note
            {
                n = if n.is_empty() {
                    r.clone()
                } else {
                    format!("{n}; {r}")
                };
            }
            rows.push(vec![
                w.namespace.clone(),
                w.kind.clone(),
                w.name.clone(),
                c.name.clone(),
                opt(&c.current.cpu).to_string(),
                with_change(c.current.cpu_millis, rec.cpu_millis, &rec.cpu),
                opt(&c.current.memory).to_string(),
                with_change(c.current.memory_bytes, rec.memory_bytes, &rec.memory),
                if i == 0 {
                    rep_cur.clone()
                } else {
                    String::new()
                },
                if i == 0 {
                    rep_rec.clone()
                } else {
                    String::new()
                },
                n,
            ]);
        }
    }
    let cols = header.len();
    let widths: Vec<usize> = (0..cols)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            if i + 1 == cols {
                line.push_str(cell);
            } else {
                let pad = widths[i] - cell.chars().count();
                line.push_str(cell);
                line.push_str(&" ".repeat(pad + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if report.workloads.is_empty() {
        out.push_str("(no Deployments, StatefulSets or DaemonSets found)\n");
    }
    out
}

pub fn json(report: &Report) -> String {
    // Plain data (strings, numbers, options) always serializes.
    let mut s = serde_json::to_string_pretty(report).unwrap_or_default();
    s.push('\n');
    s
}

/// RFC 4180 field: quoted when it holds a comma, quote or line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One row per container; numbers in millicores and bytes, empty when unknown.
pub fn csv(report: &Report) -> String {
    let mut out = String::from(
        "namespace,kind,name,container,cpu_request_millicores,cpu_recommended_millicores,memory_request_bytes,memory_recommended_bytes,replicas,replicas_recommended,oom_protected,error\n",
    );
    let num = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
    for w in &report.workloads {
        let (rep_cur, rep_rec) = match &w.replicas {
            Some(r) => (
                num(r.current.map(i64::from)),
                num(r.recommended.map(i64::from)),
            ),
            None => (String::new(), String::new()),
        };
        for c in &w.containers {
            let rec = c.recommended.clone().unwrap_or_default();
            let fields = [
                csv_field(&w.namespace),
                csv_field(&w.kind),
                csv_field(&w.name),
                csv_field(&c.name),
                num(c.current.cpu_millis),
                num(rec.cpu_millis),
                num(c.current.memory_bytes),
                num(rec.memory_bytes),
                rep_cur.clone(),
                rep_rec.clone(),
                c.oom_protected.to_string(),
                csv_field(c.error.as_deref().unwrap_or_default()),
            ];
            out.push_str(&fields.join(","));
            out.push_str("\r\n");
        }
    }
    out
}

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

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

const W: f64 = 760.0;
const H: f64 = 230.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 26.0;

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

const STYLE: &str = r#"
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;color:#1d2433;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 4px;border-bottom:1px solid #dde3ec;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}.meta{color:#5b6576;font-size:13px}
table{border-collapse:collapse;font-size:13px;margin:12px 0}th,td{padding:4px 10px;text-align:left;border-bottom:1px solid #eef1f5}
th{background:#f5f7fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.down{color:#1a7f37}.up{color:#b42318}.err{color:#9a6700}
.charts{display:flex;flex-wrap:wrap;gap:8px}.chart{max-width:100%;height:auto;background:#fcfdfe;border:1px solid #eef1f5;border-radius:4px}
.grid{stroke:#e8ecf2;stroke-width:1}.tick{font-size:10px;fill:#5b6576}
.usage{fill:none;stroke-width:1;stroke-opacity:.75}.band{stroke:none;fill-opacity:.14}
.usage.u0{stroke:#2f6fde}.usage.u1{stroke:#7a5af5}.usage.u2{stroke:#0e9384}.usage.u3{stroke:#4e5ba6}.usage.u4{stroke:#1570ef}.usage.u5{stroke:#6938ef}
.band.u0{fill:#2f6fde}.band.u1{fill:#7a5af5}.band.u2{fill:#0e9384}.band.u3{fill:#4e5ba6}.band.u4{fill:#1570ef}.band.u5{fill:#6938ef}
.ref{stroke-width:1.5}.ref.pct{stroke:#e88b00;stroke-dasharray:5 3}.ref.rec{stroke:#1a7f37}.ref.cur{stroke:#b42318;stroke-dasharray:2 2}
.reflabel{font-size:10px}.reflabel.pct{fill:#b86e00}.reflabel.rec{fill:#1a7f37}.reflabel.cur{fill:#b42318}.empty{font-size:12px;fill:#98a2b3}
.legend{font-size:12px;color:#5b6576;margin:4px 0}.legend span{margin-right:14px}.sw{display:inline-block;width:14px;height:3px;vertical-align:middle;margin-right:4px}
"#;

fn change_cell(current: Option<i64>, rec: Option<i64>) -> String {
    let c = change(current, rec);
    let class = if c.starts_with('-') {
        "down"
    } else if c.starts_with('+') {
        "up"
    } else {
        ""
    };
    format!(r#"<td class="num {class}">{}</td>"#, esc(&c))
}

/// One self-contained page: a summary table, then per container its CPU and memory history
/// (every pod), the percentile the recommendation starts from, the recommendation and the
/// current request. Inline CSS and SVG only: no script, nothing fetched.
pub fn html(report: &Report) -> String {
    let start = report.now - report.history_seconds;
    let end = report.now;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>craned recommendations</title><style>{STYLE}</style></head><body>"#
    );
    let _ = write!(
        s,
        r#"<h1>Resource recommendations</h1><p class="meta">Generated {} from {} of usage history · {} workloads · Crane's Resource recommender (percentile of usage + margin) and Replicas recommender</p>"#,
        esc(&report.generated_at),
        esc(&human_duration(report.history_seconds)),
        report.workloads.len()
    );
    // Summary.
    s.push_str(r#"<table><thead><tr><th>Workload</th><th>Container</th><th>CPU request</th><th>Recommended</th><th>Δ</th><th>Memory request</th><th>Recommended</th><th>Δ</th><th>Replicas</th><th>Recommended</th><th>Note</th></tr></thead><tbody>"#);
    for w in &report.workloads {
        let (rep_cur, rep_rec) = replicas_cells(w);
        for (i, c) in w.containers.iter().enumerate() {
            let rec = c.recommended.clone().unwrap_or_default();
            let n = note(c);
            let _ = write!(
                s,
                r##"<tr><td><a href="#{}">{}</a></td><td>{}</td><td class="num">{}</td><td class="num">{}</td>{}<td class="num">{}</td><td class="num">{}</td>{}<td class="num">{}</td><td class="num">{}</td><td class="{}">{}</td></tr>"##,
                esc(&anchor(w)),
                esc(&format!("{}/{} {}", w.namespace, w.name, w.kind)),
                esc(&c.name),
                esc(opt(&c.current.cpu)),
                esc(opt(&rec.cpu)),
                change_cell(c.current.cpu_millis, rec.cpu_millis),
                esc(opt(&c.current.memory)),
                esc(opt(&rec.memory)),
                change_cell(c.current.memory_bytes, rec.memory_bytes),
                if i == 0 { esc(&rep_cur) } else { String::new() },
                if i == 0 { esc(&rep_rec) } else { String::new() },
                if c.error.is_some() { "err" } else { "" },
                esc(&n)
            );
        }
    }
    s.push_str("</tbody></table>");
    if report.workloads.is_empty() {
        s.push_str(r#"<p class="meta">No Deployments, StatefulSets or DaemonSets found.</p>"#);
    }
    s.push_str(r#"<p class="legend"><span><i class="sw" style="background:#2f6fde"></i>usage per pod: the band spans each slice's minimum to maximum</span><span><i class="sw" style="background:#e88b00"></i>percentile of usage</span><span><i class="sw" style="background:#1a7f37"></i>recommended request</span><span><i class="sw" style="background:#b42318"></i>current request</span></p>"#);
    // Per workload.
    for w in &report.workloads {
        let _ = write!(
            s,
            r#"<h2 id="{}">{} <span class="meta">{}/{}</span></h2>"#,
            esc(&anchor(w)),
            esc(&w.name),
            esc(&w.namespace),
            esc(&w.kind)
        );
        if let Some(r) = &w.replicas {
            let _ = write!(
                s,
                r#"<p class="meta">Replicas: {} now, {} recommended{}</p>"#,
                r.current
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "-".into()),
                r.recommended
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "none".into()),
                match (&r.error, r.predicted) {
                    (Some(e), _) => format!(" ({})", esc(e)),
                    (None, true) => " (CPU history joined with its DSP prediction)".into(),
                    (None, false) => String::new(),
                }
            );
        }
        for c in &w.containers {
            let _ = write!(s, "<h3>{}</h3>", esc(&c.name));
            if let Some(e) = &c.error {
                let _ = write!(s, r#"<p class="err">{}</p>"#, esc(e));
            }
            let rec = c.recommended.clone().unwrap_or_default();
            let cpu_lines = ref_lines(
                c.cpu_percentile,
                rec.cpu_millis.map(|m| m as f64 / 1000.0),
                c.current.cpu_millis.map(|m| m as f64 / 1000.0),
            );
            let mem_lines = ref_lines(
                c.memory_percentile,
                rec.memory_bytes.map(|b| b as f64),
                c.current.memory_bytes.map(|b| b as f64),
            );
            s.push_str(r#"<div class="charts">"#);
            s.push_str(&svg_chart(
                &format!("{} CPU", c.name),
                &c.cpu_history,
                &cpu_lines,
                Unit::Cores,
                start,
                end,
            ));
            s.push_str(&svg_chart(
                &format!("{} memory", c.name),
                &c.memory_history,
                &mem_lines,
                Unit::Bytes,
                start,
                end,
            ));
            s.push_str("</div>");
        }
    }
    s.push_str("</body></html>\n");
    s
}

fn ref_lines(percentile: Option<f64>, rec: Option<f64>, cur: Option<f64>) -> Vec<RefLine> {
    let mut v = Vec::new();
    if let Some(p) = percentile {
        v.push(RefLine {
            label: "percentile".into(),
            value: p,
            class: "pct",
        });
    }
    if let Some(r) = rec {
        v.push(RefLine {
            label: "recommended".into(),
            value: r,
            class: "rec",
        });
    }
    if let Some(c) = cur {
        v.push(RefLine {
            label: "request".into(),
            value: c,
            class: "cur",
        });
    }
    v
}

fn anchor(w: &WorkloadReport) -> String {
    format!("{}-{}-{}", w.namespace, w.kind, w.name).to_lowercase()
}

/// `7d`, `36h`, `90m`.
pub fn human_duration(secs: i64) -> String {
    if secs > 0 && secs % 86_400 == 0 {
        format!("{}d", secs / 86_400)
    } else if secs > 0 && secs % 3600 == 0 {
        format!("{}h", secs / 3600)
    } else {
        format!("{}m", secs / 60)
    }
}

#[cfg(test)]
mod tests;
