//! The integration tests of `agui-sdk-server`, in one binary (one link instead of one per
//! file). `serve_signals` keeps a binary of its own (it sends SIGTERM to its process), and
//! so does `server_log_escaping` (it sets the process's tracing subscriber).

mod common;

mod copilotkit_thread_reads;
mod copilotkit_threads;
mod interrupts;
mod resumable;
mod route_kinds;
mod run_store;
mod server_delivery;
mod server_emitter;
mod server_lifecycle;
