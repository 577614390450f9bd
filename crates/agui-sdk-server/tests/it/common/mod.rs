//! The server tests' helpers, from the test kit: a router served on a loopback port, an
//! HTTP/1.1 client over a raw socket (so that a test controls exactly when the client
//! reads and when it goes away), and the small agents the runtime tests share.

pub(crate) use agui_sdk_testkit::http::Client;
pub(crate) use agui_sdk_testkit::server::*;
