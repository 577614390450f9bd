//! Connecting: the pool's settings, [`ConnectError`], and the store's own accessors.

use std::sync::Arc;
use std::time::Duration;

use agui_sdk_agent::runs::{RunLimits, RunStoreError};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;

use crate::sweep::{sweep_every, Sweep, Swept, SWEEP_AT_MOST_EVERY};
use crate::{migrate, unavailable, wake, PostgresRunStore, Sql};

/// Connections the store's pool holds at most.
const POOL_SIZE: usize = 16;

/// How long a connection stays silent before TCP keep-alives probe it.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);

/// How long a connection or a free pooled one is waited for.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why [`PostgresRunStore::connect`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The schema's name is no plain identifier.
    #[error(
        "schema name {0:?}: expected 1 to 63 characters of a-z, 0-9 and _, not starting with a digit"
    )]
    SchemaName(String),
    /// The URL does not parse.
    #[error("PostgreSQL URL: {0}")]
    Url(#[source] tokio_postgres::Error),
    /// The pool could not be built.
    #[error("PostgreSQL connection pool: {0}")]
    Pool(#[source] deadpool_postgres::BuildError),
    /// No connection could be made.
    #[error("PostgreSQL unreachable: {0}")]
    Unreachable(#[source] deadpool_postgres::PoolError),
    /// Reading or writing the schema's version failed.
    #[error("migrating schema {schema:?}: {source}")]
    Migrate {
        /// The schema.
        schema: String,
        /// What PostgreSQL answered.
        #[source]
        source: tokio_postgres::Error,
    },
    /// A migration failed; the schema is left at its version before the connect.
    #[error("schema {schema:?}: migration {version} failed: {source}")]
    Migration {
        /// The schema.
        schema: String,
        /// The migration's version.
        version: i32,
        /// What PostgreSQL answered.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The schema is at a version a newer build wrote.
    #[error(
        "schema {schema:?} is at version {found}, newer than this build's {known}: upgrade agui-sdk-postgres, or give this build another schema"
    )]
    NewerSchema {
        /// The schema.
        schema: String,
        /// Its version.
        found: i32,
        /// This build's version ([`SCHEMA_VERSION`](crate::SCHEMA_VERSION)).
        known: i32,
    },
}

impl PostgresRunStore {
    /// Connects to the PostgreSQL at `url` (`postgres://user:password@host:port/db` or
    /// `host=… user=… dbname=…`), keeps the store's tables in `schema` (created and
    /// migrated to [`SCHEMA_VERSION`] here), bounded by `limits`, whose defaults for a
    /// store shared by replicas are [`RunLimits::shared`]. The store ignores
    /// [`RunLimits::max_total_bytes`] (the database's disk bounds the whole) and
    /// [`RunLimits::safety_ttl`] (its sweep deletes what expired: a run whose producer
    /// died is ended by a reaper, then expires). Connections are made without TLS.
    ///
    /// [`SCHEMA_VERSION`]: crate::SCHEMA_VERSION
    pub async fn connect(url: &str, schema: &str, limits: RunLimits) -> Result<Self, ConnectError> {
        if !migrate::valid_schema(schema) {
            return Err(ConnectError::SchemaName(schema.to_owned()));
        }
        let mut config: tokio_postgres::Config = url.parse().map_err(ConnectError::Url)?;
        config.connect_timeout(CONNECT_TIMEOUT);
        // A connection whose peer vanished without a word is found out.
        config.keepalives_idle(KEEPALIVE_IDLE);
        if config.get_application_name().is_none() {
            config.application_name(format!("agui-sdk-postgres {schema}"));
        }
        let listener_config = config.clone();
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(CONNECT_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(ConnectError::Pool)?;
        let mut client = pool.get().await.map_err(ConnectError::Unreachable)?;
        migrate::migrate(&mut client, schema).await?;
        drop(client);
        let wakeups =
            wake::Wakeups::start(listener_config, schema.to_owned(), CONNECT_TIMEOUT).await;
        let sql = Sql::new(schema, &limits);
        let sweep = Arc::new(Sweep::new(schema, &limits));
        let every = (limits.retention.min(limits.thread_idle_ttl) / 4)
            .clamp(Duration::from_millis(100), SWEEP_AT_MOST_EVERY);
        let sweeper = tokio::spawn(sweep_every(pool.clone(), sweep.clone(), every));
        Ok(PostgresRunStore {
            pool,
            schema: schema.to_owned(),
            limits,
            sql,
            wakeups,
            sweep,
            sweeper,
            near_cap: false.into(),
        })
    }

    /// Deletes now what expired: the ended runs past [`RunLimits::retention`] (with
    /// their events) and the threads idle past [`RunLimits::thread_idle_ttl`] that run
    /// nothing (with their histories). Every store does it on its own every quarter of
    /// the shorter of the two times (at most every 30 seconds); what expired and is not
    /// swept yet is already left out of every read.
    pub async fn sweep(&self) -> Result<Swept, RunStoreError> {
        self.sweep.run(&self.pool).await
    }

    /// The schema holding the store's tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The limits in force.
    pub fn limits(&self) -> &RunLimits {
        &self.limits
    }

    /// How many notifications (`NOTIFY`) this store's wake-up connection has received:
    /// each append of any replica's store on the same schema sends one.
    pub fn wakeups_received(&self) -> u64 {
        self.wakeups.received()
    }

    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object, RunStoreError> {
        self.pool.get().await.map_err(unavailable)
    }
}
