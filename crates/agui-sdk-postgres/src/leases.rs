//! The leases role ([`Leases`]): heartbeats, cancel requests and take-overs.

use agui_sdk_agent::runs::{
    CancelOutcome, Fence, Heartbeat, Leases, RunKey, RunStoreError, RunStoreFuture,
};

use crate::{fence_text, prepared, unavailable, PostgresRunStore};

impl PostgresRunStore {
    /// Whether run `key` exists: what tells a stale fence from no run, and an ended
    /// run from no run.
    async fn exists(
        &self,
        client: &impl deadpool_postgres::GenericClient,
        key: &RunKey,
    ) -> Result<bool, RunStoreError> {
        Ok(client
            .query_opt(&self.sql.exists, &[&key.as_str()])
            .await
            .map_err(unavailable)?
            .is_some())
    }

    async fn do_heartbeat(&self, key: &RunKey, fence: Fence) -> Result<Heartbeat, RunStoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &prepared(&client, &self.sql.heartbeat).await?,
                &[&key.as_str(), &fence_text(fence)],
            )
            .await
            .map_err(unavailable)?;
        match row {
            Some(row) => Ok(Heartbeat {
                cancel_requested: row.get(0),
            }),
            None if self.exists(&client, key).await? => Err(RunStoreError::Fenced),
            None => Err(RunStoreError::NotFound),
        }
    }

    async fn do_request_cancel(&self, key: &RunKey) -> Result<CancelOutcome, RunStoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(&self.sql.cancel, &[&key.as_str()])
            .await
            .map_err(unavailable)?;
        match row {
            Some(_) => Ok(CancelOutcome::Requested),
            None if self.exists(&client, key).await? => Ok(CancelOutcome::AlreadyEnded),
            None => Err(RunStoreError::NotFound),
        }
    }

    async fn do_expired_leases(&self, limit: usize) -> Result<Vec<RunKey>, RunStoreError> {
        let client = self.client().await?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = client
            .query(&self.sql.expired, &[&limit])
            .await
            .map_err(unavailable)?;
        Ok(rows
            .iter()
            .map(|r| RunKey::from_text(r.get::<_, &str>(0)))
            .collect())
    }

    async fn do_take_over(
        &self,
        key: &RunKey,
        replica: &str,
    ) -> Result<Option<(Fence, u64)>, RunStoreError> {
        let client = self.client().await?;
        let fence = Fence::random();
        let row = client
            .query_opt(
                &self.sql.take_over,
                &[&key.as_str(), &fence_text(fence), &replica],
            )
            .await
            .map_err(unavailable)?;
        Ok(row.map(|r| (fence, u64::try_from(r.get::<_, i64>(0)).unwrap_or(0))))
    }
}

/// Leases in the runs' rows, timed by the database's clock: a heartbeat moves the
/// run's `lease_until_ms`; the expired leases are found by a partial index over the
/// running runs; a take-over is one conditional `UPDATE` that mints a new fence, so
/// two reapers cannot both take a run over and the old producer's next append or
/// heartbeat is [`RunStoreError::Fenced`].
impl Leases for PostgresRunStore {
    fn heartbeat<'a>(&'a self, key: &'a RunKey, fence: Fence) -> RunStoreFuture<'a, Heartbeat> {
        Box::pin(self.do_heartbeat(key, fence))
    }

    fn request_cancel<'a>(&'a self, key: &'a RunKey) -> RunStoreFuture<'a, CancelOutcome> {
        Box::pin(self.do_request_cancel(key))
    }

    fn expired_leases(&self, limit: usize) -> RunStoreFuture<'_, Vec<RunKey>> {
        Box::pin(self.do_expired_leases(limit))
    }

    fn take_over<'a>(
        &'a self,
        key: &'a RunKey,
        replica: &'a str,
    ) -> RunStoreFuture<'a, Option<(Fence, u64)>> {
        Box::pin(self.do_take_over(key, replica))
    }
}
