use super::chart::{BOTTOM, H, TOP};
use super::*;
use crate::prediction::Sample;
use crate::report::model::{PodSeries, ReplicasReport, Requests};

const NOW: i64 = 1_714_521_600; // 2024-05-01T00:00:00Z

fn container(name: &str, rec: Option<(i64, i64)>, error: Option<&str>) -> ContainerReport {
    let history = vec![PodSeries {
        pod: "web-5f7d-abcde".into(),
        points: (0..48)
            .map(|i| Sample::new(NOW - 2 * 86_400 + i * 3600, 0.1 + (i % 24) as f64 * 0.01))
            .collect(),
        lows: Vec::new(),
    }];
    ContainerReport {
        name: name.into(),
        current: Requests::new(Some(500), Some(512 << 20)),
        recommended: rec.map(|(c, m)| Requests::new(Some(c), Some(m))),
        error: error.map(String::from),
        oom_protected: false,
        cpu_percentile: rec.map(|_| 0.3),
        memory_percentile: rec.map(|_| 314_572_800.0),
        cpu_samples: 48,
        memory_samples: 48,
        cpu_history: history.clone(),
        memory_history: Vec::new(),
    }
}

fn report() -> Report {
    Report {
        generated_at: "2024-05-01T00:00:00Z".into(),
        now: NOW,
        history_seconds: 2 * 86_400,
        workloads: vec![
            WorkloadReport {
                namespace: "shop".into(),
                kind: "Deployment".into(),
                name: "web".into(),
                replicas: Some(ReplicasReport {
                    current: Some(3),
                    recommended: Some(2),
                    error: None,
                    predicted: false,
                }),
                containers: vec![
                    container("app", Some((345, 361_758_720)), None),
                    container(
                        "side,car",
                        None,
                        Some("insufficient data: container side,car: no cpu usage samples"),
                    ),
                ],
            },
            WorkloadReport {
                namespace: "shop".into(),
                kind: "DaemonSet".into(),
                name: "agent".into(),
                replicas: None,
                containers: vec![container("agent", Some((500, 512 << 20)), None)],
            },
        ],
    }
}

#[test]
fn table_is_aligned_golden() {
    let expected = "\
NAMESPACE  KIND        NAME   CONTAINER  CPU REQUEST  CPU RECOMMENDED  MEMORY REQUEST  MEMORY RECOMMENDED  REPLICAS  RECOMMENDED  NOTE
shop       Deployment  web    app        500m         345m (-31%)      512Mi           345Mi (-33%)        3         2
shop       Deployment  web    side,car   500m         -                512Mi           -                                          insufficient data: container side,car: no cpu usage samples
shop       DaemonSet   agent  agent      500m         500m (=)         512Mi           512Mi (=)
";
    assert_eq!(table(&report()), expected);
    let empty = Report {
        workloads: vec![],
        ..report()
    };
    assert!(table(&empty).ends_with("(no Deployments, StatefulSets or DaemonSets found)\n"));
}

#[test]
fn csv_golden_quotes_fields() {
    let expected = "namespace,kind,name,container,cpu_request_millicores,cpu_recommended_millicores,memory_request_bytes,memory_recommended_bytes,replicas,replicas_recommended,oom_protected,error\n\
shop,Deployment,web,app,500,345,536870912,361758720,3,2,false,\r\n\
shop,Deployment,web,\"side,car\",500,,536870912,,3,2,false,\"insufficient data: container side,car: no cpu usage samples\"\r\n\
shop,DaemonSet,agent,agent,500,500,536870912,536870912,,,false,\r\n";
    assert_eq!(csv(&report()), expected);
}

#[test]
fn json_has_numbers_and_quantities() {
    let v: serde_json::Value = serde_json::from_str(&json(&report())).unwrap();
    let w = &v["workloads"][0];
    assert_eq!(w["replicas"]["recommended"], 2);
    let app = &w["containers"][0];
    assert_eq!(app["recommended"]["cpuMillis"], 345);
    assert_eq!(app["recommended"]["cpu"], "345m");
    assert_eq!(app["recommended"]["memoryBytes"], 361_758_720);
    assert_eq!(app["current"]["memory"], "512Mi");
    assert_eq!(app["cpuPercentile"], 0.3);
    assert!(app.get("cpuHistory").is_none(), "history stays out of json");
    assert_eq!(w["containers"][1]["recommended"], serde_json::Value::Null);
    assert!(v["workloads"][1].get("replicas").is_none());
    assert_eq!(v["historySeconds"], 172_800);
}

#[test]
fn html_is_self_contained_and_draws_lines() {
    let page = html(&report());
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.ends_with("</html>\n"));
    // Nothing is fetched or run.
    for forbidden in ["<script", "src=", "href=\"http", "@import", "url("] {
        assert!(!page.contains(forbidden), "found {forbidden}");
    }
    // One chart per resource per container, each pod a polyline, and the reference lines.
    assert_eq!(page.matches("<svg").count(), 6);
    assert_eq!(page.matches("<polyline").count(), 3);
    assert!(page.contains(r#"class="ref pct""#));
    assert!(page.contains(r#"class="ref rec""#));
    assert!(page.contains(r#"class="ref cur""#));
    assert!(page.contains("percentile 300m"));
    assert!(page.contains("recommended 345m"));
    assert!(page.contains("request 500m"));
    assert!(page.contains("request 512Mi"));
    assert!(page.contains("no usage history"));
    // Names are escaped; anchors link the summary to the sections.
    assert!(page.contains(r##"<a href="#shop-deployment-web">"##));
    assert!(page.contains(r#"<h2 id="shop-deployment-web">"#));
    assert!(page.contains(r#"<td class="num down">-31%</td>"#));
    let nasty = Report {
        workloads: vec![WorkloadReport {
            name: "<b>&".into(),
            ..report().workloads[1].clone()
        }],
        ..report()
    };
    let page = html(&nasty);
    assert!(page.contains("&lt;b&gt;&amp;"));
    assert!(!page.contains("<b>&"));
}

#[test]
fn svg_chart_scales_and_labels() {
    let series = [PodSeries {
        pod: "p".into(),
        points: vec![Sample::new(0, 0.0), Sample::new(86_400, 1.0)],
        lows: vec![Sample::new(0, 0.0), Sample::new(86_400, 0.5)],
    }];
    let lines = [RefLine {
        label: "request".into(),
        value: 2.0,
        class: "cur",
    }];
    let svg = svg_chart("t", &series, &lines, Unit::Cores, 0, 86_400);
    // y max = 2 × 1.1 rounded up to a 1-core step → 3: the line at 2 cores is 2/3 up.
    assert!(
        svg.contains(r#"<text class="tick" x="58.0" y="208.0" text-anchor="end">0</text>"#),
        "{svg}"
    );
    assert!(svg.contains(">3</text>"), "{svg}");
    let plot_h = H - TOP - BOTTOM;
    let y2 = TOP + plot_h - plot_h * 2.0 / 3.0;
    assert!(svg.contains(&format!(r#"y1="{y2:.1}""#)), "{svg}");
    // Time ticks every 3 hours on a one-day span.
    assert!(svg.contains(">03:00</text>"));
    assert!(svg.contains(r#"points="64.0,204.0 610.0,"#), "{svg}");
    // The band runs along the maxima and back along the minima (0.5 core: a sixth up).
    assert!(
        svg.contains(
            r#"<polygon class="band u0" points="64.0,204.0 610.0,139.3 610.0,171.7 64.0,204.0"/>"#
        ),
        "{svg}"
    );
}

#[test]
fn labels_and_steps() {
    assert_eq!(axis_label(0.25, Unit::Cores), "250m");
    assert_eq!(axis_label(1.5, Unit::Cores), "1.5");
    assert_eq!(axis_label(0.0, Unit::Cores), "0");
    assert_eq!(axis_label(536_870_912.0, Unit::Bytes), "512Mi");
    assert_eq!(axis_label(1.5 * 1073741824.0, Unit::Bytes), "1.5Gi");
    assert_eq!(axis_label(100.0, Unit::Bytes), "100");
    assert_eq!(nice_step(0.27), 0.5);
    assert_eq!(nice_step(130.0), 200.0);
    assert_eq!(nice_step(0.0), 1.0);
    assert_eq!(axis_step(300.0 * 1048576.0, Unit::Bytes), 500.0 * 1048576.0);
    assert_eq!(axis_step(0.3, Unit::Cores), 0.5);
    assert_eq!(change(Some(500), Some(345)), "-31%");
    assert_eq!(change(Some(100), Some(150)), "+50%");
    assert_eq!(change(Some(100), Some(100)), "=");
    assert_eq!(change(None, Some(100)), "");
    assert_eq!(human_duration(7 * 86_400), "7d");
    assert_eq!(human_duration(36 * 3600), "36h");
}
