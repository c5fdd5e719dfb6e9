//! craned against the real control plane and a Prometheus holding 7 days of backfilled
//! cAdvisor-style history: a RecommendationRule yields Recommendations whose CPU and memory
//! targets equal the values computed here, independently, from the same synthetic series;
//! deleting a Deployment deletes its Recommendation and its gauges; a change of the
//! recommendation configuration file is picked up without a restart.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use ferrocrane_e2e::{
    Cluster, Fault, FaultProxy, HistoryPrometheus, ServiceProcess, install_craned_crds,
    patch_pod_status, running_status, two_ports, wait_until,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Service};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

mod craned_support;
use craned_support::*;

#[tokio::test(flavor = "multi_thread")]
async fn resource_recommendations_from_backfilled_history() -> Result<()> {
    let cluster = Cluster::get()?;
    let client = cluster.client().await?;
    install_craned_crds(cluster, &client).await?;
    let ns = cluster.namespace("craned").await?;

    // History ends a minute ago, so "now - 7 days" in craned's query lies inside it.
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
    let end_minute = now / MINUTE - 1;
    let prometheus = HistoryPrometheus::start(&history(&ns.name, end_minute)).await?;

    create_workloads(&client, &ns.name).await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns.name);

    let config_path = write_config_file("0.15")?;
    let (metrics_port, health_port) = two_ports()?;
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    // craned reads Prometheus through a fault proxy, so later steps can fail it.
    let proxy = FaultProxy::start(&prometheus.handle.url).await?;
    let craned_args = craned_args(
        cluster,
        &proxy.url(),
        &config_path,
        &metrics_addr,
        health_port,
        &ns.name,
    )?;
    let readyz = format!("http://127.0.0.1:{health_port}/readyz");
    let mut craned = ServiceProcess::start("craned", &craned_args)?;
    craned.wait_ready(&readyz, Duration::from_secs(60)).await?;

    let rule_name = format!("e2e-{}", ns.name);
    let rules = rule_api(&client);
    let _guard = create_rule(cluster, &client, &rule_name, resource_rule_spec(&ns.name)).await?;

    let recs = recommendation_api(&client, &ns.name);
    for (i, w) in workloads().into_iter().enumerate() {
        let rec =
            wait_ready_recommendation(&recs, &mut craned, w.name, Duration::from_secs(90)).await?;
        if i == 0 {
            // craned's default path: the values below come from remote read, evaluated in
            // craned (tests/tests/craned_remote_read.rs proves it equals the range queries).
            let log = craned.logs();
            assert!(log.contains("reading history with remote read"), "{log}");
        }
        let got = targets_of(&rec)?;
        for (c, p, cpu_req, mem_req) in &w.containers {
            let want = expected(p, end_minute, 0.15);
            assert_eq!(
                got.get(*c),
                Some(&want),
                "{}/{c}: {:#?}",
                w.name,
                rec.data["status"]
            );
            // currentInfo holds the Deployment's requests.
            let current = rec.data["status"]["currentInfo"].as_str().unwrap_or("");
            assert!(
                current.contains(&format!("\"cpu\":\"{cpu_req}\""))
                    && current.contains(&format!("\"memory\":\"{mem_req}\"")),
                "{current}"
            );
        }
        // Crane's labels and owner.
        let labels = rec.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels["analysis.crane.io/recommendation-rule-name"],
            rule_name
        );
        assert_eq!(
            labels["analysis.crane.io/recommendation-target-kind"],
            "Deployment"
        );
        assert_eq!(
            labels["analysis.crane.io/recommendation-rule-recommender"],
            "Resource"
        );
        assert_eq!(rec.data["spec"]["type"], "Resource");
        let owners = rec.metadata.owner_references.clone().unwrap_or_default();
        assert_eq!(owners[0].kind, "RecommendationRule");
        // StatusAndAnnotation (the default) annotates the Deployment.
        let d = deployments.get(w.name).await?;
        let ann = d.metadata.annotations.unwrap_or_default();
        assert!(
            ann.get("analysis.crane.io/resource-recommendation")
                .is_some_and(|a| a.contains("containers:")),
            "{ann:?}"
        );
    }

    // The gauges hold the same values.
    let (web_cpu, web_mem) = expected(&workloads()[0].containers[0].1, end_minute, 0.15);
    wait_until("web's resource gauges", Duration::from_secs(30), || {
        let addr = metrics_addr.clone();
        async move {
            let text = scrape(&addr).await?;
            let app = |r: &str| {
                gauge(
                    &text,
                    "crane_analysis_resource_recommendation",
                    &[
                        "owner_name=\"web\"",
                        "container=\"app\"",
                        &format!("resource=\"{r}\""),
                    ],
                )
            };
            let ok = app("cpu") == Some(web_cpu as f64 / 1000.0)
                && app("memory") == Some(web_mem as f64)
                && text.contains("crane_analysis_recommendation_execution_total{")
                && text.contains("crane_analysis_recommendations_status{");
            if ok {
                Ok(Some(()))
            } else {
                bail!("not yet:\n{text}")
            }
        }
    })
    .await?;

    // The rule's status lists the run.
    wait_until("the rule's status", Duration::from_secs(30), || {
        let rules = rules.clone();
        let name = rule_name.clone();
        async move {
            let r = rules.get(&name).await?;
            let s = &r.data["status"];
            let ok = s["runNumber"] == 1
                && s["lastUpdateTime"].is_string()
                && s["recommendations"].as_array().map(Vec::len) == Some(2);
            if ok {
                Ok(Some(()))
            } else {
                bail!("status: {s:#}")
            }
        }
    })
    .await?;

    // Deleting a Deployment deletes its Recommendation and its gauges.
    deployments.delete("db", &DeleteParams::default()).await?;
    wait_until(
        "db's Recommendation deleted",
        Duration::from_secs(60),
        || {
            let recs = recs.clone();
            async move {
                Ok(recommendations_of(&recs, "db")
                    .await?
                    .is_empty()
                    .then_some(()))
            }
        },
    )
    .await
    .with_context(|| format!("craned log:\n{}", craned.logs()))?;
    wait_until("db's gauges gone", Duration::from_secs(30), || {
        let addr = metrics_addr.clone();
        async move {
            let text = scrape(&addr).await?;
            Ok((!text.contains("owner_name=\"db\"")).then_some(()))
        }
    })
    .await?;
    assert!(scrape(&metrics_addr).await?.contains("owner_name=\"web\""));

    // A new configuration file is picked up without a restart: wait for the reload, then
    // trigger a round; the margins change the targets.
    std::fs::write(&config_path, config_file("0.5"))?;
    wait_until("the configuration reload", Duration::from_secs(60), || {
        let addr = metrics_addr.clone();
        async move {
            let text = scrape(&addr).await?;
            Ok((gauge(
                &text,
                "craned_config_reloads_total",
                &["result=\"success\""],
            ) >= Some(1.0))
            .then_some(()))
        }
    })
    .await?;
    rules
        .patch(
            &rule_name,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {"analysis.crane.io/run-once": "now"}}}),
            ),
        )
        .await?;
    let want = expected(&workloads()[0].containers[0].1, end_minute, 0.5);
    wait_until(
        "web's recommendation with the new margin",
        Duration::from_secs(60),
        || {
            let recs = recs.clone();
            async move {
                let Some(rec) = ready_recommendation(&recs, "web").await? else {
                    return Ok(None);
                };
                Ok((targets_of(&rec)?.get("app") == Some(&want)).then_some(()))
            }
        },
    )
    .await
    .with_context(|| format!("craned log:\n{}", craned.logs()))?;
    // The round is recorded and the trigger annotation removed once it is done.
    wait_until(
        "round 2 recorded, trigger removed",
        Duration::from_secs(30),
        || {
            let rules = rules.clone();
            let name = rule_name.clone();
            async move {
                let r = rules.get(&name).await?;
                let triggered = r
                    .metadata
                    .annotations
                    .unwrap_or_default()
                    .contains_key("analysis.crane.io/run-once");
                Ok((r.data["status"]["runNumber"] == 2 && !triggered).then_some(()))
            }
        },
    )
    .await?;

    // An OOM kill: a pod of web (created by the controller manager's ReplicaSet) reports its
    // app container OOMKilled. The recorder writes it to the oom-record ConfigMap, and the
    // next round raises app's memory to max(request + 100Mi, request × 1.2).
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let pod = wait_until("web's pods", Duration::from_secs(60), || {
        let pods = pods.clone();
        async move {
            let list = pods
                .list(&kube::api::ListParams::default().labels("app=web"))
                .await?;
            Ok(list.items.into_iter().next())
        }
    })
    .await?;
    let pod_name = pod.metadata.name.clone().context("pod name")?;
    let oom_at = SystemTime::now() - Duration::from_secs(600);
    let oom_at = k8s_openapi::jiff::Timestamp::from_second(
        oom_at.duration_since(UNIX_EPOCH)?.as_secs() as i64,
    )?
    .to_string();
    let mut status = running_status(&["app", "sidecar"], &oom_at);
    status["containerStatuses"][0]["restartCount"] = json!(1);
    status["containerStatuses"][0]["lastState"] = json!({"terminated": {
        "reason": "OOMKilled", "exitCode": 137, "startedAt": oom_at, "finishedAt": oom_at,
    }});
    patch_pod_status(&pods, &pod_name, status).await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns.name);
    wait_until("the oom-record ConfigMap", Duration::from_secs(60), || {
        let cms = cms.clone();
        let pod_name = pod_name.clone();
        async move {
            let Some(cm) = cms.get_opt("oom-record").await? else {
                return Ok(None);
            };
            let data = cm
                .data
                .unwrap_or_default()
                .remove("data")
                .unwrap_or_default();
            let records: Value = serde_json::from_str(&data)?;
            Ok(records
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r["Pod"] == pod_name && r["Container"] == "app" && r["Memory"] == "1Gi")
                .then_some(()))
        }
    })
    .await
    .with_context(|| format!("craned log:\n{}", craned.logs()))?;
    let gib: i64 = 1 << 30;
    let bumped = (gib + 100 * (1 << 20)).max((gib as f64 * 1.2) as i64);
    let (usage_cpu, usage_mem) = expected(&workloads()[0].containers[0].1, end_minute, 0.5);
    assert!(
        bumped > usage_mem,
        "the test needs the bump above the usage estimate"
    );
    let trigger = |value: &'static str| {
        let rules = rules.clone();
        let name = rule_name.clone();
        async move {
            rules
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(
                        json!({"metadata": {"annotations": {"analysis.crane.io/run-once": value}}}),
                    ),
                )
                .await
        }
    };
    // Re-runs the rule on demand and waits for a round newer than the last finished one.
    let next_round = |value: &'static str, what: &'static str| {
        let rules = rules.clone();
        let name = rule_name.clone();
        let trigger = &trigger;
        async move {
            let run_before = rules.get(&name).await?.data["status"]["runNumber"]
                .as_i64()
                .unwrap_or(0);
            trigger(value).await?;
            wait_until(what, Duration::from_secs(60), || {
                let rules = rules.clone();
                let name = name.clone();
                async move {
                    let r = rules.get(&name).await?;
                    Ok((r.data["status"]["runNumber"].as_i64() > Some(run_before)).then_some(()))
                }
            })
            .await
        }
    };
    let wait_bumped = |what: &'static str| {
        let recs = recs.clone();
        async move {
            wait_until(what, Duration::from_secs(60), || {
                let recs = recs.clone();
                async move {
                    let Some(rec) = ready_recommendation(&recs, "web").await? else {
                        return Ok(None);
                    };
                    Ok((targets_of(&rec)?.get("app") == Some(&(usage_cpu, bumped))).then_some(()))
                }
            })
            .await
        }
    };
    trigger("oom").await?;
    wait_bumped("web's app memory bumped after the OOM kill")
        .await
        .with_context(|| format!("craned log:\n{}", craned.logs()))?;

    // The record survives a restart of craned even when the pod is gone: it comes from the
    // ConfigMap, not from the pod watch.
    pods.delete(&pod_name, &DeleteParams::default()).await?;
    drop(craned);
    let mut craned = ServiceProcess::start("craned", &craned_args)?;
    craned.wait_ready(&readyz, Duration::from_secs(60)).await?;
    next_round("after-restart", "a round after the restart")
        .await
        .with_context(|| format!("craned log:\n{}", craned.logs()))?;
    wait_bumped("web's app memory still bumped after a restart")
        .await
        .with_context(|| format!("craned log:\n{}", craned.logs()))?;

    // Leader election: a second replica waits while the first holds the Lease, and takes over
    // (the first releases it on SIGTERM) to run the next round.
    let leases: Api<Lease> = Api::namespaced(client.clone(), &ns.name);
    let holder = |l: &Lease| {
        l.spec
            .as_ref()
            .and_then(|s| s.holder_identity.clone())
            .unwrap_or_default()
    };
    let first_holder = holder(&leases.get("craned").await?);
    assert!(!first_holder.is_empty());
    let (m2, h2) = two_ports()?;
    let mut standby_args = craned_args.clone();
    standby_args[3] = format!("--metrics-bind-address=127.0.0.1:{m2}");
    standby_args[4] = format!("--health-probe-bind-address=127.0.0.1:{h2}");
    let mut standby = start_craned(&standby_args, h2).await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(holder(&leases.get("craned").await?), first_holder);
    assert!(
        !standby.logs().contains("became leader"),
        "{}",
        standby.logs()
    );
    drop(craned);
    let new_holder = wait_until(
        "the standby takes the lease",
        Duration::from_secs(30),
        || {
            let leases = leases.clone();
            let first = first_holder.clone();
            async move {
                let h = holder(&leases.get("craned").await?);
                Ok((!h.is_empty() && h != first).then_some(h))
            }
        },
    )
    .await
    .with_context(|| format!("standby log:\n{}", standby.logs()))?;
    // The lease is written before the line is logged: wait for the line, do not race it.
    wait_until(
        "the standby logs that it became leader",
        Duration::from_secs(10),
        || {
            let logged = standby.logs().contains("became leader");
            async move { Ok(logged.then_some(())) }
        },
    )
    .await
    .with_context(|| {
        format!(
            "lease holder {new_holder}; standby log:\n{}",
            standby.logs()
        )
    })?;
    next_round("standby", "a round by the new leader")
        .await
        .with_context(|| format!("standby log:\n{}", standby.logs()))?;
    // Prometheus fails in each way a round can meet: the round still completes, the
    // Recommendation keeps its value and says why it is not Ready, and craned keeps running.
    // Once Prometheus answers again, craned retries by itself (30 s after the first failure)
    // rather than at the rule's next round a day later.
    let good = ready_recommendation(&recs, "web")
        .await?
        .context("web's recommendation is Ready before the faults")?;
    let good_value = good.data["status"]["recommendedValue"].clone();
    let faults = [
        (Fault::Down, "Connection refused"),
        (Fault::Status(500), "500"),
        (Fault::Garbage, "decod"),
        (Fault::Oversized(8 << 20), "--prometheus-max-response-size"),
    ];
    for (fault, cause) in faults {
        proxy.set(fault.clone()).await?;
        next_round("prometheus-fault", "a round while Prometheus fails")
            .await
            .with_context(|| format!("{fault:?}; standby log:\n{}", standby.logs()))?;
        let failed = wait_until(
            "PrometheusUnavailable on web's recommendation",
            Duration::from_secs(60),
            || {
                let recs = recs.clone();
                async move {
                    Ok(recommendations_of(&recs, "web")
                        .await?
                        .into_iter()
                        .find(|r| {
                            let s = &r.data["status"];
                            s["conditions"][0]["status"] == "False"
                                && s["conditions"][0]["reason"] == "PrometheusUnavailable"
                        }))
                }
            },
        )
        .await
        .with_context(|| format!("{fault:?}; standby log:\n{}", standby.logs()))?;
        let status = &failed.data["status"];
        assert_eq!(
            status["recommendedValue"], good_value,
            "{fault:?} overwrote the last good value: {status:#}"
        );
        let message = status["conditions"][0]["message"].as_str().unwrap_or("");
        assert!(
            message.contains(cause),
            "{fault:?}: the condition does not name the cause ({cause:?}): {message}"
        );
        proxy.set(Fault::None).await?;
        // No trigger: the retry brings it back.
        wait_until(
            "web's recommendation Ready again without a new round",
            Duration::from_secs(90),
            || {
                let recs = recs.clone();
                async move { ready_recommendation(&recs, "web").await }
            },
        )
        .await
        .with_context(|| format!("{fault:?}; standby log:\n{}", standby.logs()))?;
        standby.ensure_running()?;
        eprintln!("{fault:?}: PrometheusUnavailable naming {cause:?}, value kept, retried");
    }

    // The leader is killed (no chance to release the Lease): a third replica takes over once
    // the Lease expires (15 s), and the next round is written once, by it.
    let (m3, h3) = two_ports()?;
    let mut third_args = craned_args.clone();
    third_args[3] = format!("--metrics-bind-address=127.0.0.1:{m3}");
    third_args[4] = format!("--health-probe-bind-address=127.0.0.1:{h3}");
    let mut third = start_craned(&third_args, h3).await?;
    standby.signal("KILL")?;
    let killed_at = std::time::Instant::now();
    let taken = wait_until(
        "the third replica takes the lease of the killed leader",
        Duration::from_secs(40),
        || {
            let leases = leases.clone();
            let killed = new_holder.clone();
            async move {
                let h = holder(&leases.get("craned").await?);
                Ok((!h.is_empty() && h != killed).then_some(h))
            }
        },
    )
    .await
    .with_context(|| format!("third replica log:\n{}", third.logs()))?;
    let takeover = killed_at.elapsed();
    eprintln!("leader killed: {taken} took the lease after {takeover:?}");
    assert!(
        takeover <= Duration::from_secs(15 + 2 + 5),
        "the takeover took {takeover:?}, more than the 15 s lease and a 2 s retry (+5 s slack)"
    );
    next_round("third", "a round by the replica that took over")
        .await
        .with_context(|| format!("third replica log:\n{}", third.logs()))?;
    let web_recs = recommendations_of(&recs, "web").await?;
    assert_eq!(
        web_recs.len(),
        1,
        "one Recommendation for web after three leaders: {:#?}",
        web_recs
            .iter()
            .map(|r| &r.metadata.name)
            .collect::<Vec<_>>()
    );

    // A bad edit of the configuration file is refused: counted as a failed reload, named in
    // the log, and the next round still runs on the last good configuration (margin 0.5).
    let failures_before = gauge(
        &scrape(&format!("127.0.0.1:{m3}")).await?,
        "craned_config_reloads_total",
        &["result=\"failure\""],
    )
    .unwrap_or(0.0);
    std::fs::write(
        &config_path,
        "recommenders: [this is not: a configuration\n",
    )?;
    wait_until("the bad reload refused", Duration::from_secs(60), || {
        let addr = format!("127.0.0.1:{m3}");
        async move {
            let text = scrape(&addr).await?;
            Ok((gauge(
                &text,
                "craned_config_reloads_total",
                &["result=\"failure\""],
            ) > Some(failures_before))
            .then_some(()))
        }
    })
    .await
    .with_context(|| format!("third replica log:\n{}", third.logs()))?;
    assert!(
        third.logs().contains(&config_path.display().to_string()),
        "the refused reload names the file:\n{}",
        third.logs()
    );
    next_round("bad-config", "a round after the bad edit")
        .await
        .with_context(|| format!("third replica log:\n{}", third.logs()))?;
    wait_bumped("web's recommendation still from the last good configuration")
        .await
        .with_context(|| format!("third replica log:\n{}", third.logs()))?;
    third.ensure_running()?;
    Ok(())
}

/// One day of per-minute samples of each `(series, value per minute, counter)` ending at
/// `end_minute`; counters accumulate `value × 60` per minute.
fn flat_history(end_minute: i64, series: &[(String, f64, bool)]) -> String {
    let mut out = String::new();
    for (name, value, counter) in series {
        let mut total = 0.0;
        for m in end_minute - 24 * 60..=end_minute {
            total += value * 60.0;
            let v = if *counter { total } else { *value };
            let _ = writeln!(out, "{name} {v} {}", m * MINUTE);
        }
    }
    out.push_str("# EOF\n");
    out
}

/// Deletes the test's Nodes (cluster-scoped, so the namespace does not take them along).
struct NodesGuard {
    api: Api<Node>,
    names: Vec<String>,
}

impl Drop for NodesGuard {
    fn drop(&mut self) {
        let (api, names) = (self.api.clone(), self.names.clone());
        // Drop cannot await; a detached thread with its own runtime does the deletes.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            if let Ok(rt) = rt {
                rt.block_on(async {
                    for n in names {
                        let _ = api.delete(&n, &DeleteParams::default()).await;
                    }
                });
            }
        })
        .join();
    }
}

/// The Recommendation of a target once its last run reached `reason` (Ready's reason).
async fn recommendation_with_reason(
    api: &Api<DynamicObject>,
    target: &str,
    reason: &str,
) -> Result<Option<DynamicObject>> {
    Ok(recommendations_of(api, target)
        .await?
        .into_iter()
        .find(|r| r.data.pointer("/status/conditions/0/reason") == Some(&json!(reason))))
}

/// IdleNode and Service read their thresholds' series from Prometheus with Crane's
/// expressions: a node whose CPU requests stay at 10% of capacity is idle, one at 80% is not;
/// a LoadBalancer Service without endpoints whose pods receive 1 B/s is an orphan, one whose
/// pods receive 100 kB/s is not.
#[tokio::test(flavor = "multi_thread")]
async fn idle_nodes_and_orphan_services_from_prometheus_series() -> Result<()> {
    let cluster = Cluster::get()?;
    let client = cluster.client().await?;
    install_craned_crds(cluster, &client).await?;
    let ns = cluster.namespace("craned-idle").await?;
    let n = &ns.name;
    let (idle, busy) = (format!("idle-{n}"), format!("busy-{n}"));

    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
    let mut series = Vec::new();
    for (node, requested) in [(&idle, 0.4), (&busy, 3.2)] {
        series.push((format!("kube_node_labels{{node=\"{node}\"}}"), 1.0, false));
        series.push((
            format!("kube_node_status_capacity{{node=\"{node}\",resource=\"cpu\",unit=\"core\"}}"),
            4.0,
            false,
        ));
        series.push((
            format!(
                "kube_pod_container_resource_requests{{node=\"{node}\",namespace=\"{n}\",pod=\"on-{node}\",container=\"app\",resource=\"cpu\",unit=\"core\"}}"
            ),
            requested,
            false,
        ));
    }
    for (pod, bytes_per_second) in [("quiet-0", 1.0), ("loud-0", 100_000.0)] {
        series.push((
            format!(
                "container_network_receive_bytes_total{{namespace=\"{n}\",pod=\"{pod}\",container=\"app\"}}"
            ),
            bytes_per_second,
            true,
        ));
    }
    let prometheus = HistoryPrometheus::start(&flat_history(now / MINUTE - 1, &series)).await?;

    let nodes: Api<Node> = Api::all(client.clone());
    let _nodes_guard = NodesGuard {
        api: nodes.clone(),
        names: vec![idle.clone(), busy.clone()],
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    let pod = |name: &str, labels: Value, node: Option<&str>| -> Result<Pod> {
        Ok(serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "nodeName": node,
                "containers": [{"name": "app", "image": "registry.invalid/app:1"}],
            },
        }))?)
    };
    for node in [&idle, &busy] {
        let obj: Node = serde_json::from_value(json!({
            "metadata": {"name": node, "labels": {"e2e-namespace": n}},
        }))?;
        nodes.create(&PostParams::default(), &obj).await?;
        // A bare pod is a workload, so the node is judged by its utilization.
        pods.create(
            &PostParams::default(),
            &pod(&format!("on-{node}"), json!({}), Some(node))?,
        )
        .await?;
    }
    let services: Api<Service> = Api::namespaced(client.clone(), n);
    for app in ["quiet", "loud"] {
        // Pods that never run have no IP, so the Services have no endpoint addresses.
        pods.create(
            &PostParams::default(),
            &pod(&format!("{app}-0"), json!({ "app": app }), None)?,
        )
        .await?;
        let svc: Service = serde_json::from_value(json!({
            "metadata": {"name": app},
            "spec": {"type": "LoadBalancer", "selector": {"app": app}, "ports": [{"port": 80}]},
        }))?;
        services.create(&PostParams::default(), &svc).await?;
    }

    let dir = tempfile_dir()?;
    let config_path = dir.join("recommendation-configuration.yaml");
    std::fs::write(
        &config_path,
        "apiVersion: analysis.crane.io/v1alpha1
kind: RecommendationConfiguration
recommenders:
  - name: IdleNode
    acceptedResources:
      - kind: Node
        apiVersion: v1
    config:
      cpu-request-utilization: \"0.3\"
      creation-cooldown: \"0s\"
  - name: Service
    acceptedResources:
      - kind: Service
        apiVersion: v1
    config:
      net-receive-bytes: \"1000\"
      creation-cooldown: \"0s\"
",
    )?;
    let (metrics_port, health_port) = two_ports()?;
    let args = craned_args(
        cluster,
        &prometheus.handle.url,
        &config_path,
        &format!("127.0.0.1:{metrics_port}"),
        health_port,
        n,
    )?;
    let mut craned = start_craned(&args, health_port).await?;
    let _rule = create_rule(
        cluster,
        &client,
        &format!("e2e-idle-{n}"),
        json!({
            "runInterval": "24h",
            "namespaceSelector": {"matchNames": [n]},
            "resourceSelectors": [
                {"kind": "Node", "apiVersion": "v1",
                 "labelSelector": {"matchLabels": {"e2e-namespace": n}}},
                {"kind": "Service", "apiVersion": "v1"},
            ],
            "recommenders": [{"name": "IdleNode"}, {"name": "Service"}],
        }),
    )
    .await?;

    let recs = recommendation_api(&client, n);
    for (target, reason, description) in [
        (
            idle.as_str(),
            "RecommendationReady",
            "Node resource utilization is low",
        ),
        (busy.as_str(), "NotApplicable", "is not a idle node"),
        (
            "quiet",
            "RecommendationReady",
            "It is a Orphan Service, Pod net bytes low",
        ),
        ("loud", "NotApplicable", "is not a Orphan Service"),
    ] {
        let rec = wait_until(
            &format!("{target}'s recommendation: {reason}"),
            Duration::from_secs(90),
            || {
                let recs = recs.clone();
                let alive = craned.ensure_running();
                async move {
                    alive?;
                    recommendation_with_reason(&recs, target, reason).await
                }
            },
        )
        .await
        .with_context(|| format!("craned log:\n{}", craned.logs()))?;
        let status = &rec.data["status"];
        assert!(
            status["description"]
                .as_str()
                .is_some_and(|d| d.contains(description)),
            "{target}: {status:#}"
        );
        let want_action = if reason == "RecommendationReady" {
            "Delete"
        } else {
            ""
        };
        assert_eq!(
            status["action"].as_str().unwrap_or(""),
            want_action,
            "{target}: {status:#}"
        );
    }
    Ok(())
}
