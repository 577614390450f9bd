//! The protocol's data types besides events: messages, content, tools, the run input,
//! interrupts, outcomes, token usage, capabilities and JSON Patch operations.

mod capabilities;
mod content;
mod input;
mod input_cost;
mod interrupt;
mod message;
mod outcome;
mod patch;
mod tool;
mod usage;

pub use capabilities::*;
pub use content::*;
pub use input::*;
pub use interrupt::*;
pub use message::*;
pub use outcome::*;
pub use patch::*;
pub use tool::*;
pub use usage::*;
