//! Recommenders.
