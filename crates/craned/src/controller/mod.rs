//! craned's controllers, one folder each, and what they share.
//!
//! * [`recommendation_rule`]: RecommendationRule in, Recommendations and `crane_*` gauges out.
//! * [`time_series_prediction`]: TimeSeriesPrediction in, predicted series in its status.
//!
//! Shared by all of them: leader election ([`leader`]: one Lease, nothing is written unless
//! this replica leads), status writes ([`status_writes`]: on `/status`, or with the object on
//! Crane's CRDs that declare no status subresource), Events ([`events`]), the field manager
//! of every write ([`FIELD_MANAGER`]), and the reconcile telemetry
//! (`craned_reconcile_*{controller}`, [`crate::metrics::reconcile`]).

pub mod events;
pub mod leader;
pub mod recommendation_rule;
pub mod status_writes;
pub mod time_series_prediction;

use std::time::Duration;

pub use self::status_writes::{STATUS_FIELD_MANAGER, StatusWrites};

/// The field manager of every write.
pub const FIELD_MANAGER: &str = "craned";

/// How long a non-leader waits before looking again.
const FOLLOWER_RECHECK: Duration = Duration::from_secs(5);
