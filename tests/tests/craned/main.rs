//! craned end to end: Recommendations from backfilled history (values, deletion, reloads,
//! OOM kills, leader election, Prometheus faults, idle nodes), OOM records, remote read, the
//! one-shot report, Crane's own craned beside it, and the autoscaling half
//! (TimeSeriesPredictions, cron and predicted EHPAs with metrics-adapter and the real HPA).

mod autoscaling;
mod bed;
mod differential;
mod idle_nodes;
mod leader;
mod oom;
mod oom_rounds;
mod prediction;
mod prediction_scaling;
mod prometheus_faults;
mod recommendations;
mod reload;
mod remote_read;
mod report;
mod unchanged;
mod validation;
