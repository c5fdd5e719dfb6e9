//! The end-to-end harness: a real etcd, kube-apiserver, kube-controller-manager,
//! kube-scheduler, kwok (simulated nodes and pods) and Prometheus, started by the same
//! `hack/local-up.sh` a developer runs, and the kubectl `hack/setup.sh` builds for them.
//!
//! `hack/test.sh` starts one cluster for the whole run and points the tests at it with
//! `FERROCRANE_E2E_ENV=<dir>/env`. A test binary run alone (`cargo test -p ferrocrane-e2e`)
//! starts its own cluster on first use and a reaper stops it when the binary exits.
//! Every test works in a namespace of its own, deleted when the test ends.

mod adapter;
mod backends;
mod cluster;
mod corpus;
pub mod craned;
mod craned_crds;
pub mod differential;
mod exporter;
mod fault_proxy;
mod helm;
mod history;
pub mod ksm;
mod kwok;
pub mod layout;
mod namespace;
mod originals;
mod pinned;
mod pods;
mod ports;
mod process;
mod prometheus;
mod service;
mod top;
mod usage;
mod wait;
mod workload;

pub use adapter::{
    AdapterLaunch, FrontProxiedAdapter, METRICS_APISERVICES, MetricsAdapter, adapter_https_client,
    adapter_https_client_presenting, adapter_https_client_resolving,
};
pub use backends::{Backend, BackendKind, THANOS_REPLICA_LABEL};
pub use cluster::{Cluster, ClusterEnv, Kubectl, PrivateCluster};
pub use corpus::{CORPUS_LABEL, Corpus};
pub use craned_crds::install_craned_crds;
pub use exporter::Exporter;
pub use fault_proxy::{Fault, FaultProxy};
pub use helm::{ClusterLock, Helm, METRICS_APISERVICES_LOCK, Manifest};
pub use history::{History, HistoryPrometheus, WEEK_MINUTES};
pub use kwok::{KWOK_USAGE_CPU, KWOK_USAGE_MEMORY};
pub use namespace::TestNamespace;
pub use pinned::{PinnedPrometheus, pin_time};
pub use pods::{create_bare_node, patch_pod_status, running_status};
pub use ports::{free_port, free_ports, two_ports};
pub use process::{http_client, repo_root};
pub use prometheus::{PrometheusHandle, Sample, ScrapeTarget};
pub use service::{ServiceProcess, binary};
pub use top::{mebibytes, millicores, top_rows};
pub use usage::{MIB, SyntheticContainer, SyntheticPod, SyntheticWorkload, Usage, daily};
pub use wait::{wait_http_ok, wait_until};
pub use workload::{TEST_IMAGE, Workload};
