//! One module per group of subcommands.

pub(crate) mod check;
pub(crate) mod codec;
pub(crate) mod demo;
pub(crate) mod inspect;
pub(crate) mod run;
pub(crate) mod semantics;
pub(crate) mod serve;
