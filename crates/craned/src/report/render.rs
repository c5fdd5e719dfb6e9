//! The report's four formats. Pure: a [`Report`] in, text out. The text formats are here;
//! the HTML page is in [`html`], its charts in [`chart`].

mod chart;
mod html;

pub use self::chart::{RefLine, Unit, axis_label, axis_step, nice_step, svg_chart};
pub use self::html::{html, human_duration};
use super::model::{ContainerReport, Report, WorkloadReport};

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

/// Escapes text for HTML and SVG.
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

#[cfg(test)]
mod tests;
