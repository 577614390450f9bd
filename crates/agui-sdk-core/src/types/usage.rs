//! Token usage reported by `RUN_FINISHED` and `RUN_ERROR`.

use crate::wire::de::Count;

wire_struct! {
    /// Token counts for one provider and model.
    pub struct TokenUsage {
        /// Lower-case vendor id.
        opt provider: String = "provider",
        /// Model name.
        opt model: String = "model",
        /// Total prompt tokens.
        opt input_tokens: u64 = "inputTokens" via Count,
        /// Total generated tokens.
        opt output_tokens: u64 = "outputTokens" via Count,
        /// Input plus output.
        opt total_tokens: u64 = "totalTokens" via Count,
        /// Part of output tokens spent reasoning.
        opt reasoning_tokens: u64 = "reasoningTokens" via Count,
        /// Part of input tokens read from cache.
        opt cached_input_tokens: u64 = "cachedInputTokens" via Count,
        /// Part of input tokens written to cache.
        opt cache_write_input_tokens: u64 = "cacheWriteInputTokens" via Count,
    }
}
