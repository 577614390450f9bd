//! The core's integration tests, in one binary (one link instead of one per file).

mod common;
// The test kit's reference-package gate (std only), included: the kit depends on this
// crate, so a dev-dependency on it would put a second copy of the core in its unit tests.
// Its items are the kit's public API there, unreachable here.
#[path = "../../../agui-sdk-testkit/src/interop.rs"]
#[allow(unreachable_pub)]
mod interop_gate;

mod compat_thinking;
mod duplicate_keys;
mod encoding_frame;
mod encoding_golden;
mod encoding_interop;
mod encoding_negotiate;
mod encoding_props;
mod encoding_proto_depth;
mod event_constructors;
mod protocol_1_1;
mod semantics_apply;
mod semantics_chunks;
mod semantics_compact;
mod semantics_differential;
mod semantics_downgrade;
mod semantics_enforce;
mod semantics_interrupts;
mod semantics_pipeline;
mod semantics_robust;
mod semantics_verify;
mod semantics_verify_identity;
mod wire_errors;
mod wire_golden;
mod wire_roundtrip;
