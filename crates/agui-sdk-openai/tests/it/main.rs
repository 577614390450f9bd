//! The integration tests of `agui-sdk-openai`, in one binary (one link instead of one per file).

mod fake;

mod openai_agent;
mod openai_interop;
mod openai_upstream;
