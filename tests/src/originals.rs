//! The Go originals the differential tests run beside ours (kube-state-metrics,
//! prometheus-adapter), built by `hack/originals.sh` into the directory `hack/setup.sh` fills.

use std::path::PathBuf;

use anyhow::{Result, bail};

use crate::cluster::Cluster;

// Beside the differential helpers rather than in cluster.rs, so the cluster module needs
// nothing from here.
impl Cluster {
    /// The executable of the Go original `name` (`kube-state-metrics`, `prometheus-adapter`).
    pub fn original(&self, name: &str) -> Result<PathBuf> {
        let path = self.env.path("FERROCRANE_BIN")?.join(name);
        if !path.is_file() {
            bail!(
                "{} is missing: the differential tests run the Go original beside ours; \
                 build it with hack/originals.sh {name} (hack/setup.sh --tests does)",
                path.display()
            );
        }
        Ok(path)
    }
}
