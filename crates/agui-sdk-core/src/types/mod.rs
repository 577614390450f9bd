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

crate::wire::shape::leaves!(TextMessageRole, ToolCallType, ResumeStatus);

impl crate::wire::shape::WireShape for Content {
    const SHAPE: crate::wire::shape::Shape =
        crate::wire::shape::Shape::TextOr(&<ContentPart as crate::wire::shape::WireShape>::SHAPE);
}

impl crate::wire::shape::Blank for Content {
    fn blank() -> Self {
        Content::default()
    }
}
