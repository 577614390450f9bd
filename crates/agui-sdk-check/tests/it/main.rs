//! The integration tests of `agui-sdk-check`, in one binary (one link instead of one per file).

mod check_broken;
mod check_demo;
mod check_honest;
mod check_interop;
mod check_redirect;
mod check_report;
mod check_rules_doc;
