//! The report as one self-contained HTML page: a summary table, then each workload's
//! containers with their charts.

use std::fmt::Write as _;

use super::chart::{RefLine, Unit, svg_chart};
use super::{change, esc, note, opt, replicas_cells};
use crate::report::model::{Report, WorkloadReport};

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
