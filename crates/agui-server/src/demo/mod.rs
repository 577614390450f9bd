//! Demo agents.
