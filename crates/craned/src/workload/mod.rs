//! A workload as craned reads it — which pods are its own and what its pod template asks
//! for — with one owner for the controller and `craned recommend` alike, so both look at the
//! same pods and the same requests.

pub mod pods;
pub mod template;

pub use pods::{exact_pods_regex, pod_name_regex, regex_escape};
pub use template::{TemplateContainer, spec_replicas, template_containers};
