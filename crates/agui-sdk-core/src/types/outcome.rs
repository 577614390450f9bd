//! Why a run (or a subagent's part of it) ended.

use super::Interrupt;
use crate::wire::de::AtLeastOne;

wire_struct! {
    /// The run completed.
    pub struct SuccessOutcome {
        /// Tool calls started in the run that nobody answered (frontend tools).
        opt pending_tool_call_ids: Vec<String> = "pendingToolCallIds",
    }
}

wire_struct! {
    /// The run is paused until its interrupts are answered.
    pub struct InterruptOutcome {
        /// At least one interrupt.
        req interrupts: Vec<Interrupt> = "interrupts" via AtLeastOne<Interrupt>,
    }
}

wire_struct! {
    /// The run was stopped by whoever ran it, without failing.
    pub struct CancelledOutcome {}
}

wire_union! {
    /// Why a run ended (`RUN_FINISHED.outcome`); absent means success.
    pub enum RunFinishedOutcome : tag "type", expecting "an outcome object with a `type` of success, interrupt or cancelled" {
        /// `success`.
        Success(SuccessOutcome) = "success",
        /// `interrupt`.
        Interrupt(InterruptOutcome) = "interrupt",
        /// `cancelled`.
        Cancelled(CancelledOutcome) = "cancelled",
    }
}

impl RunFinishedOutcome {
    /// An interrupt outcome.
    pub fn interrupt(interrupts: Vec<Interrupt>) -> Self {
        RunFinishedOutcome::Interrupt(InterruptOutcome {
            interrupts,
            ..InterruptOutcome::wire_blank()
        })
    }
}

wire_struct! {
    /// The subagent completed.
    pub struct SubagentSuccessOutcome {}
}

wire_struct! {
    /// The subagent is paused awaiting outside input.
    pub struct SubagentSuspendedOutcome {
        /// The interrupts the subagent raised.
        opt interrupt_ids: Vec<String> = "interruptIds",
    }
}

wire_union! {
    /// Why a subagent's segment of a run ended (`SUBAGENT_FINISHED.outcome`).
    pub enum SubagentFinishedOutcome : tag "type", expecting "a subagent outcome with a `type` of success or suspended" {
        /// `success`.
        Success(SubagentSuccessOutcome) = "success",
        /// `suspended`.
        Suspended(SubagentSuspendedOutcome) = "suspended",
    }
}
