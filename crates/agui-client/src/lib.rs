//! AG-UI client runtime.
