//! Every TimeSeriesPrediction metric's fitted models, fitted in the background. A reconcile
//! only reads what is there and asks for what is missing, stale or changed; fits run a
//! bounded number at a time, each with a deadline, and wake their TSP's reconcile when done.
//! So a model that is slow to fit, or a history query that hangs, never holds up another TSP
//! (Crane's reconcile waits for its model, forever, in one of its ten workers).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use kube::runtime::reflector::ObjectRef;
use tokio::sync::{Semaphore, mpsc};

use super::algorithm::ModelConfig;
use super::model::{SeriesModel, fit_all};
use super::status::Outcome;
use crate::crd::prediction::TimeSeriesPrediction;
use crate::datasource::History;

/// How long one fit may take, history query included.
const FIT_DEADLINE: Duration = Duration::from_secs(300);

/// Settings of the fitting.
#[derive(Debug, Clone, Copy)]
pub struct Fitting {
    /// A fitted model is refitted this long after (Crane's `--model-update-interval`, 12h).
    pub refresh: Duration,
    /// A failed fit is tried again this long after.
    pub retry: Duration,
    /// Fits at a time.
    pub concurrency: usize,
}

/// The models of one metric of one TSP, and what they were fitted for.
struct Entry {
    /// The query and configuration: a change refits.
    fitted_for: String,
    state: State,
    /// A fit is running (a refit keeps serving the models it will replace).
    fitting: bool,
}

enum State {
    Unknown,
    Fitted {
        at: Instant,
        models: Vec<SeriesModel>,
    },
    Failed {
        at: Instant,
        why: String,
    },
}

pub struct Models {
    entries: Mutex<HashMap<(String, String), Entry>>,
    history: History,
    fitting: Fitting,
    limit: Arc<Semaphore>,
    /// The TSPs whose fit finished, to reconcile again.
    done: mpsc::UnboundedSender<ObjectRef<TimeSeriesPrediction>>,
}

/// One metric to know about: its TSP (reference and uid), identifier, query and model.
pub struct Ask<'a> {
    pub tsp: ObjectRef<TimeSeriesPrediction>,
    pub uid: &'a str,
    pub id: &'a str,
    pub query: String,
    pub config: ModelConfig,
}

impl Models {
    pub fn new(
        history: History,
        fitting: Fitting,
    ) -> (
        Arc<Models>,
        mpsc::UnboundedReceiver<ObjectRef<TimeSeriesPrediction>>,
    ) {
        let (done, finished) = mpsc::unbounded_channel();
        let models = Models {
            entries: Mutex::new(HashMap::new()),
            history,
            limit: Arc::new(Semaphore::new(fitting.concurrency.max(1))),
            fitting,
            done,
        };
        (Arc::new(models), finished)
    }

    /// What is known of a metric now; starts a fit when there is none, it is stale, or the
    /// query or model changed.
    pub fn outcome(self: &Arc<Self>, ask: Ask<'_>) -> Outcome {
        let fitted_for = format!("{}\n{:?}", ask.query, ask.config);
        let key = (ask.uid.to_owned(), ask.id.to_owned());
        let (outcome, fit) = {
            let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            let entry = entries.entry(key.clone()).or_insert_with(|| Entry {
                fitted_for: fitted_for.clone(),
                state: State::Unknown,
                fitting: false,
            });
            if entry.fitted_for != fitted_for {
                // What runs for the old question lands nowhere (see below).
                *entry = Entry {
                    fitted_for: fitted_for.clone(),
                    state: State::Unknown,
                    fitting: false,
                };
            }
            let (outcome, stale) = match &entry.state {
                State::Unknown => (Outcome::Pending, true),
                State::Fitted { at, models } => (
                    Outcome::Models(models.clone()),
                    at.elapsed() >= self.fitting.refresh,
                ),
                State::Failed { at, why } => (
                    Outcome::Failed(why.clone()),
                    at.elapsed() >= self.fitting.retry,
                ),
            };
            let fit = stale && !entry.fitting;
            entry.fitting |= fit;
            (outcome, fit)
        };
        if fit {
            let models = Arc::clone(self);
            let Ask {
                tsp, query, config, ..
            } = ask;
            tokio::spawn(async move {
                let _permit = models.limit.clone().acquire_owned().await.ok();
                let result = tokio::time::timeout(FIT_DEADLINE, models.fit(&query, config)).await;
                let at = Instant::now();
                let state = match result {
                    Ok(Ok(fitted)) => State::Fitted { at, models: fitted },
                    Ok(Err(why)) => State::Failed { at, why },
                    Err(_) => State::Failed {
                        at,
                        why: format!("fitting took longer than {}s", FIT_DEADLINE.as_secs()),
                    },
                };
                {
                    let mut entries = models.entries.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(e) = entries.get_mut(&key)
                        && e.fitted_for == fitted_for
                    {
                        e.state = state;
                        e.fitting = false;
                    }
                }
                let _ = models.done.send(tsp);
            });
        }
        outcome
    }

    async fn fit(&self, query: &str, config: ModelConfig) -> Result<Vec<SeriesModel>, String> {
        let now = SystemTime::now();
        let history = Duration::from_secs(u64::try_from(config.history_secs()).unwrap_or(0));
        let step = Duration::from_secs(u64::try_from(config.step_secs()).unwrap_or(60).max(1));
        let start = now.checked_sub(history).unwrap_or(SystemTime::UNIX_EPOCH);
        let series = self
            .history
            .range(query, start, now, step)
            .await
            .map_err(|e| format!("history query failed: {e}"))?;
        // The FFT of weeks of minutes is CPU work: off the async threads.
        tokio::task::spawn_blocking(move || fit_all(&config, &series))
            .await
            .map_err(|e| format!("fitting failed: {e}"))?
    }

    /// Forgets the models of TSPs whose uid `keep` refuses (deleted ones).
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(uid, _), _| keep(uid));
    }
}
