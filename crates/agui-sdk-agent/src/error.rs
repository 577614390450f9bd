//! What an agent reports when it fails: [`AgentError`].

use std::fmt;

/// An agent's failure. What the client sees is only the *public* part (a message and
/// an optional code); the underlying cause, if any, goes to the server log.
///
/// Build one with [`AgentError::public`] when the message is safe to show, or convert
/// any error with `?` (through `From`): such errors are reported to the client as a
/// generic `agent failed` message, so internal details (paths, SQL, keys) never leak.
#[derive(Debug)]
pub struct AgentError {
    message: String,
    code: Option<String>,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl AgentError {
    /// An error whose message is shown to the client as is.
    pub fn public(message: impl Into<String>) -> Self {
        AgentError {
            message: message.into(),
            code: None,
            source: None,
        }
    }

    /// An internal error: logged in full, shown to the client as `agent failed`.
    pub fn internal(source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        AgentError {
            message: "agent failed".to_owned(),
            code: Some("agent_error".to_owned()),
            source: Some(source.into()),
        }
    }

    /// Sets the `code` carried by the `RUN_ERROR`.
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    /// The message the client sees.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The code the client sees, if any.
    pub fn code(&self) -> Option<&str> {
        self.code.as_deref()
    }

    /// The internal cause, if any (never sent to the client).
    pub fn cause(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.source.as_deref()
    }
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(s) = &self.source {
            write!(f, ": {s}")?;
        }
        Ok(())
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for AgentError {
    fn from(e: E) -> Self {
        AgentError::internal(e)
    }
}
