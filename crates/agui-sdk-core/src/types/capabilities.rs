//! What an agent declares it can do. Every field is optional: an omitted field means
//! "not declared", not "unsupported".

use super::Tool;
use crate::wire::de::Count;
use crate::JsonObject;

wire_struct! {
    /// Who the agent is.
    pub struct IdentityCapabilities {
        /// Agent name.
        opt name: String = "name",
        /// Framework or kind.
        opt r#type: String = "type",
        /// What it does.
        opt description: String = "description",
        /// Version.
        opt version: String = "version",
        /// Provider.
        opt provider: String = "provider",
        /// Documentation URL.
        opt documentation_url: String = "documentationUrl",
        /// Extra information.
        opt metadata: JsonObject = "metadata",
    }
}

wire_struct! {
    /// Transports the agent handles.
    pub struct TransportCapabilities {
        /// Server-Sent Events.
        opt streaming: bool = "streaming",
        /// WebSocket.
        opt websocket: bool = "websocket",
        /// Protobuf over HTTP.
        opt http_binary: bool = "httpBinary",
        /// Push notifications.
        opt push_notifications: bool = "pushNotifications",
        /// Resumable streams.
        opt resumable: bool = "resumable",
    }
}

wire_struct! {
    /// Tool calling.
    pub struct ToolsCapabilities {
        /// Calls tools at all.
        opt supported: bool = "supported",
        /// Tools the agent itself owns.
        opt items: Vec<Tool> = "items",
        /// Several calls at once.
        opt parallel_calls: bool = "parallelCalls",
        /// Accepts tools from the client.
        opt client_provided: bool = "clientProvided",
    }
}

wire_struct! {
    /// Output formats.
    pub struct OutputCapabilities {
        /// Structured (JSON Schema) output.
        opt structured_output: bool = "structuredOutput",
        /// MIME types produced.
        opt supported_mime_types: Vec<String> = "supportedMimeTypes",
    }
}

wire_struct! {
    /// State handling.
    pub struct StateCapabilities {
        /// STATE_SNAPSHOT.
        opt snapshots: bool = "snapshots",
        /// STATE_DELTA.
        opt deltas: bool = "deltas",
        /// Memory across runs.
        opt memory: bool = "memory",
        /// Persistent state.
        opt persistent_state: bool = "persistentState",
    }
}

wire_struct! {
    /// A subagent a parent agent can invoke.
    pub struct SubagentInfo {
        /// Name.
        req name: String = "name",
        /// What it does.
        opt description: String = "description",
    }
}

impl SubagentInfo {
    /// A subagent with its name.
    pub fn new(name: impl Into<String>) -> Self {
        SubagentInfo {
            name: name.into(),
            ..SubagentInfo::wire_blank()
        }
    }
}

wire_struct! {
    /// Multi-agent coordination.
    pub struct MultiAgentCapabilities {
        /// Coordinates agents at all.
        opt supported: bool = "supported",
        /// Delegates work.
        opt delegation: bool = "delegation",
        /// Hands off conversations.
        opt handoffs: bool = "handoffs",
        /// Subagents it can invoke.
        opt subagents: Vec<SubagentInfo> = "subagents",
    }
}

wire_struct! {
    /// Reasoning.
    pub struct ReasoningCapabilities {
        /// Emits reasoning.
        opt supported: bool = "supported",
        /// Streams it.
        opt streaming: bool = "streaming",
        /// Emits encrypted values.
        opt encrypted: bool = "encrypted",
    }
}

wire_struct! {
    /// Accepted input modalities.
    pub struct MultimodalInputCapabilities {
        /// Images.
        opt image: bool = "image",
        /// Audio.
        opt audio: bool = "audio",
        /// Video.
        opt video: bool = "video",
        /// PDF.
        opt pdf: bool = "pdf",
        /// Files.
        opt file: bool = "file",
    }
}

wire_struct! {
    /// Produced output modalities.
    pub struct MultimodalOutputCapabilities {
        /// Images.
        opt image: bool = "image",
        /// Audio.
        opt audio: bool = "audio",
    }
}

wire_struct! {
    /// Multimodal input and output.
    pub struct MultimodalCapabilities {
        /// Input.
        opt input: MultimodalInputCapabilities = "input",
        /// Output.
        opt output: MultimodalOutputCapabilities = "output",
    }
}

wire_struct! {
    /// Execution limits.
    pub struct ExecutionCapabilities {
        /// Runs code.
        opt code_execution: bool = "codeExecution",
        /// In a sandbox.
        opt sandboxed: bool = "sandboxed",
        /// Iteration limit.
        opt max_iterations: u64 = "maxIterations" via Count,
        /// Time limit in milliseconds.
        opt max_execution_time: u64 = "maxExecutionTime" via Count,
    }
}

wire_struct! {
    /// Human-in-the-loop support.
    pub struct HumanInTheLoopCapabilities {
        /// At all.
        opt supported: bool = "supported",
        /// Approvals.
        opt approvals: bool = "approvals",
        /// Interventions.
        opt interventions: bool = "interventions",
        /// Feedback.
        opt feedback: bool = "feedback",
        /// Interrupt outcomes and resume.
        opt interrupts: bool = "interrupts",
        /// Approvals with edited arguments.
        opt approve_with_edits: bool = "approveWithEdits",
    }
}

wire_struct! {
    /// What an agent declares it can do.
    pub struct AgentCapabilities {
        /// Identity.
        opt identity: IdentityCapabilities = "identity",
        /// Transports.
        opt transport: TransportCapabilities = "transport",
        /// Tools.
        opt tools: ToolsCapabilities = "tools",
        /// Output.
        opt output: OutputCapabilities = "output",
        /// State.
        opt state: StateCapabilities = "state",
        /// Multi-agent.
        opt multi_agent: MultiAgentCapabilities = "multiAgent",
        /// Reasoning.
        opt reasoning: ReasoningCapabilities = "reasoning",
        /// Multimodal.
        opt multimodal: MultimodalCapabilities = "multimodal",
        /// Execution.
        opt execution: ExecutionCapabilities = "execution",
        /// Human in the loop.
        opt human_in_the_loop: HumanInTheLoopCapabilities = "humanInTheLoop",
        /// Integration-specific capabilities.
        opt custom: JsonObject = "custom",
    }
}

impl HumanInTheLoopCapabilities {
    /// What an agent that pauses runs with interrupt outcomes declares:
    /// `{"supported": true, "interrupts": true}` (it is served under
    /// `humanInTheLoop.interrupts`, not at the top level of the capabilities).
    ///
    /// ```
    /// use agui_sdk_core::{AgentCapabilities, HumanInTheLoopCapabilities};
    ///
    /// let caps = AgentCapabilities::default()
    ///     .with_description("Asks before it sends an email.")
    ///     .with_human_in_the_loop(HumanInTheLoopCapabilities::interrupts().with_approvals());
    /// assert_eq!(
    ///     serde_json::to_value(&caps).unwrap(),
    ///     serde_json::json!({
    ///         "identity": { "description": "Asks before it sends an email." },
    ///         "humanInTheLoop": { "supported": true, "approvals": true, "interrupts": true }
    ///     })
    /// );
    /// ```
    pub fn interrupts() -> Self {
        HumanInTheLoopCapabilities {
            supported: Some(true),
            interrupts: Some(true),
            ..HumanInTheLoopCapabilities::wire_blank()
        }
    }

    /// Also declares approvals (`"approvals": true`): the interrupts ask a human to
    /// approve an action.
    pub fn with_approvals(mut self) -> Self {
        self.supported = Some(true);
        self.approvals = Some(true);
        self
    }
}

impl AgentCapabilities {
    /// With `identity.description` set to `description` (the rest of `identity` kept).
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.identity
            .get_or_insert_with(IdentityCapabilities::wire_blank)
            .description = Some(description.into());
        self
    }

    /// With `humanInTheLoop` set to `human_in_the_loop` (see
    /// [`HumanInTheLoopCapabilities::interrupts`]).
    pub fn with_human_in_the_loop(mut self, human_in_the_loop: HumanInTheLoopCapabilities) -> Self {
        self.human_in_the_loop = Some(human_in_the_loop);
        self
    }
}
