//! Subscribers: callbacks the conversation calls as a run progresses.

use agui_sdk_core::event::*;
use agui_sdk_core::semantics::InboundWarning;
use agui_sdk_core::{Event, Message};
use serde_json::Value;

use crate::error::ClientError;

/// What a subscriber wants after a callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Flow {
    /// Go on with the run.
    #[default]
    Continue,
    /// Stop the run: the request is cancelled and `run_agent` returns
    /// [`ClientError::Stopped`].
    Stop,
}

macro_rules! per_event {
    ($( $variant:ident = $wire:literal, $ctor:ident, $method:ident, $inner:ty, $proto:tt, $sort:tt; )*) => {
        /// Callbacks for a run. Every method has a no-op default; implement the ones you
        /// need. Each event first reaches [`on_event`](Subscriber::on_event), then the
        /// method for its kind, after it has been applied to the conversation. (`Conversation`
        /// expands `*_CHUNK` events into start / content / end before subscribers see
        /// them, so it never calls the three chunk callbacks.)
        pub trait Subscriber: Send {
            /// Any event, after it was applied.
            fn on_event(&mut self, event: &Event) -> Flow {
                let _ = event;
                Flow::Continue
            }
            $(
                #[doc = concat!("A `", $wire, "` event, after it was applied.")]
                fn $method(&mut self, event: &$variant) -> Flow {
                    let _ = event;
                    Flow::Continue
                }
            )*
            /// The messages changed; `changed` are the ids of the messages that moved.
            fn on_messages_changed(&mut self, messages: &[Message], changed: &[String]) -> Flow {
                let _ = (messages, changed);
                Flow::Continue
            }
            /// The state changed.
            fn on_state_changed(&mut self, state: &Value) -> Flow {
                let _ = state;
                Flow::Continue
            }
            /// The inbound pipeline changed, dropped or could not fully apply something:
            /// material enforcement stripped, an event of an unknown type, a translated
            /// deprecated event, an era shim's loss, a producer declaring a newer
            /// protocol version, a state patch that did not apply. Also logged through
            /// `tracing`.
            fn on_warning(&mut self, warning: &InboundWarning) {
                let _ = warning;
            }
            /// The run finished (`RUN_FINISHED`), successfully, with an interrupt, or cancelled.
            fn on_run_finished(&mut self, event: &RunFinished) {
                let _ = event;
            }
            /// The run failed: a `RUN_ERROR`, or a transport or protocol error.
            fn on_run_failed(&mut self, error: &ClientError) {
                let _ = error;
            }
        }

        /// Calls the kind-specific method for `event`.
        pub(crate) fn dispatch(s: &mut dyn Subscriber, event: &Event) -> Flow {
            match event {
                $( Event::$variant(e) => s.$method(e), )*
                // `Event` is non-exhaustive for other crates; every variant it has is
                // matched above, since both come from the same list.
                _ => Flow::Continue,
            }
        }
    };
}

// One callback per event, generated from the core's list of events.
agui_sdk_core::for_each_event!(per_event);
