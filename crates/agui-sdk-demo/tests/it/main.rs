//! The tests that run the server with the demo agents, in one binary (one link instead
//! of one per file).

mod common;

mod copilotkit;
mod server_demo;
mod server_interop;
mod server_requests;
mod server_streaming;
mod server_time_bounds;
