//! The test bed and what all three services share: the control plane, kwok, Prometheus and
//! the other query backends, exposition checked by promtool, control-plane faults and slow
//! clients.

mod backends;
mod exposition_promtool;
mod faults_control_plane;
mod kube_discovery;
mod kwok;
mod prometheus_client;
mod slow_clients;
mod smoke;
