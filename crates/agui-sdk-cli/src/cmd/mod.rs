//! One module per group of subcommands.

pub mod check;
pub mod codec;
pub mod demo;
pub mod inspect;
pub mod run;
pub mod semantics;
pub mod serve;
