//! The helm chart (charts/ferrocrane) and the plain manifests rendered from it (deploy/): what
//! it renders (only the helm binary needed), its RBAC, a real install, upgrade and uninstall,
//! and each binary running under the chart's identities.

mod identities;
mod install;
mod rbac;
mod render;
mod rendered;
