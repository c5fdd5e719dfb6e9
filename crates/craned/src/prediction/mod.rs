//! Predictors: turn a usage history into an estimate.
