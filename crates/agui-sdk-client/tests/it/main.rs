//! The integration tests of `agui-sdk-client`, in one binary (one link instead of one per file).

mod client_agent;
mod client_demo;
mod client_failures;
mod client_interop;
mod client_limits;
mod client_redirects;
mod client_resume;
mod conformance;
