//! The integration tests of `agui-sdk-cli`, in one binary (one link instead of one per file).

mod common;
#[path = "../../../agui-sdk-model/tests/it/fake/mod.rs"]
mod fake;
#[path = "../../../agui-sdk-model/tests/it/fake_server.rs"]
mod fake_server;

mod cli_check;
mod cli_codec;
mod cli_hostile;
mod cli_inspect;
mod cli_interrupts;
mod cli_jsonl;
mod cli_mcp;
mod cli_openai;
mod cli_postgres;
mod cli_postgres_restart;
mod cli_reasoning;
mod cli_redirect;
mod cli_replicas;
mod cli_run;
mod cli_semantics;
mod cli_serve;
mod cli_serve_owner;
