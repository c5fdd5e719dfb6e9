//! ksm end to end: the exporter against the shared cluster (one namespace per test), beside
//! the Go kube-state-metrics where it claims to behave the same.

mod auth_filter;
mod autosharding;
mod custom_resources;
mod differential;
mod objects;
mod reload;
mod server_sharding;
mod tls;
