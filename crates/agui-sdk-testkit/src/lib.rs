//! What the workspace's integration tests share, in one unpublished crate (each crate
//! names it as a path-only `[dev-dependencies]` entry, which `cargo package` strips):
//!
//! - [`server`]: a router served on `127.0.0.1:0`, its address and base URL, and a
//!   guard that stops it when dropped; the small agents and helpers the server tests
//!   share;
//! - [`http`]: an HTTP/1.1 client over a raw socket, so that a test controls exactly
//!   when it reads and when it goes away;
//! - [`redis`]: the Redis gate (`AGUI_TEST_REDIS_URL`, `AGUI_REQUIRE_REDIS`);
//! - [`interop`]: the reference-package gate (`AGUI_REQUIRE_INTEROP`), and
//!   [`reference`](mod@reference): the servers and the client built on the reference SDKs, run as
//!   child processes;
//! - [`rng`] and [`events`]: a seeded generator and the event stream it draws;
//! - [`redirect`]: listeners that answer with redirects (one on `127.0.0.2`, a foreign
//!   host) and record the headers of every request they get.
//!
//! Every gate has the same shape: without what it needs, a test prints one line saying
//! it is skipped and how to run it, and returns, so that `cargo test` on a fresh clone
//! passes; with the matching `AGUI_REQUIRE_*` variable set (as `scripts/test-all.sh`,
//! and so CI, sets them), a missing dependency is a failure, never a skip.
//!
//! `agui-sdk-core` does not use this crate: it depends on the core, and a
//! dev-dependency of the core on it would link a second copy of the core into the
//! core's unit tests (whose types would then not be the ones under test), and would
//! build the server stack for the tests of a crate that has no I/O. So the core keeps
//! its own proptest generators (`tests/it/common/arb.rs`), and includes
//! [`interop`]'s file, which uses only `std`, by `#[path]`.

pub mod events;
pub mod http;
pub mod interop;
pub mod redirect;
pub mod redis;
pub mod reference;
pub mod rng;
pub mod server;
