//! The permits a run takes from the server's memory budget
//! ([`ServerConfig::memory_budget`](crate::ServerConfig::memory_budget)) and from the
//! run count while it runs. What a request costs is estimated from its JSON text before
//! it is parsed, by [`RunAgentInput::parsed_cost_estimate`](agui_sdk_core::RunAgentInput::parsed_cost_estimate).

use std::sync::Arc;

use axum::http::StatusCode;

use crate::error::ApiError;

/// What a running run holds of the server's limits (released when it ends).
#[derive(Debug, Default)]
pub(crate) struct RunPermit {
    _runs: Option<tokio::sync::OwnedSemaphorePermit>,
    _memory: Option<tokio::sync::OwnedSemaphorePermit>,
}

/// The memory budget of [`ServerConfig::memory_budget`], as KiB permits.
pub(crate) fn memory_semaphore(budget: Option<usize>) -> Option<Arc<tokio::sync::Semaphore>> {
    budget.map(|bytes| {
        Arc::new(tokio::sync::Semaphore::new(
            (bytes / 1024).clamp(1, tokio::sync::Semaphore::MAX_PERMITS),
        ))
    })
}

/// Takes what a request that is not a run holds of the memory budget while it is
/// handled: `cost` bytes for its `body`, with no run base.
#[cfg(feature = "copilotkit")]
pub(crate) fn request_permit(
    memory: Option<&Arc<tokio::sync::Semaphore>>,
    body: &[u8],
    cost: usize,
) -> Result<RunPermit, ApiError> {
    let memory = match memory {
        Some(sem) => {
            let kib = u32::try_from(cost / 1024 + 1).unwrap_or(u32::MAX);
            Some(sem.clone().try_acquire_many_owned(kib).map_err(|_| {
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "memory_budget",
                    format!(
                        "the server's memory budget has no room for a {} byte request now; retry later",
                        body.len()
                    ),
                )
            })?)
        }
        None => None,
    };
    Ok(RunPermit {
        _runs: None,
        _memory: memory,
    })
}

/// Takes `cost` bytes of the memory budget for what a response holds while it is
/// alive (`what` names it in the refusal); nothing is taken for a cost of 0.
#[cfg(feature = "copilotkit")]
pub(crate) fn held_permit(
    memory: Option<&Arc<tokio::sync::Semaphore>>,
    cost: usize,
    what: &str,
) -> Result<RunPermit, ApiError> {
    let memory = match memory {
        Some(sem) if cost > 0 => {
            let kib = u32::try_from(cost / 1024 + 1).unwrap_or(u32::MAX);
            Some(sem.clone().try_acquire_many_owned(kib).map_err(|_| {
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "memory_budget",
                    format!(
                        "the server's memory budget has no room for {what} ({cost} bytes held while it is sent) now; retry later"
                    ),
                )
            })?)
        }
        _ => None,
    };
    Ok(RunPermit {
        _runs: None,
        _memory: memory,
    })
}

/// Takes a run's permits: one of `runs` (when counted), and its cost in `memory` for a
/// request of this `body` (see [`ServerConfig::memory_budget`]).
pub(crate) fn run_permit(
    runs: Option<tokio::sync::OwnedSemaphorePermit>,
    memory: Option<&Arc<tokio::sync::Semaphore>>,
    body: &[u8],
) -> Result<RunPermit, ApiError> {
    let memory = match memory {
        Some(sem) => {
            let cost = agui_sdk_core::RunAgentInput::parsed_cost_estimate(body)
                .saturating_add(crate::config::RUN_COST_BASE);
            let body = body.len();
            let kib = u32::try_from(cost / 1024).unwrap_or(u32::MAX);
            Some(sem.clone().try_acquire_many_owned(kib).map_err(|_| {
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "memory_budget",
                    format!(
                        "the server's memory budget has no room for a run of a {body} byte request now; retry later"
                    ),
                )
            })?)
        }
        None => None,
    };
    Ok(RunPermit {
        _runs: runs,
        _memory: memory,
    })
}
