//! AG-UI server runtime.
