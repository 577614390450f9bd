//! JSON wire form: the macros that define protocol objects, decoding helpers and the
//! error type that says where bad input went wrong.

#[macro_use]
pub(crate) mod macros;
pub mod de;
mod error;
pub(crate) mod shape;

pub use error::{from_json_slice, from_json_str, from_json_value, JsonError};
