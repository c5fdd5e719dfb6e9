//! metrics-adapter end to end: its APIs through the real aggregator, the HPA and kubectl
//! top on its answers, faults in Prometheus, and the Go prometheus-adapter beside it.

mod aggregation;
mod apis;
mod crane_cron;
mod differential;
mod faults;
mod kwok;
mod long_query;
mod object_cache;
mod top;
