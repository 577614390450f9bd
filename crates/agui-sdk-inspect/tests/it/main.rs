//! The integration tests of `agui-sdk-inspect`, in one binary (one link instead of one per file).

mod hostile_input;
mod inspect;
