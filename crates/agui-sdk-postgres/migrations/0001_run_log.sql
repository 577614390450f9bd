-- The run log: one row per run, one row per kept event.
CREATE TABLE {schema}.runs (
    key text PRIMARY KEY,
    run_id text NOT NULL,
    thread_id text NOT NULL,
    agent text NOT NULL,
    body_hash text NOT NULL,
    owner_replica text NOT NULL,
    -- The producer's fence, 32 hex digits.
    fence text NOT NULL,
    status text NOT NULL,
    head bigint NOT NULL DEFAULT 0,
    oldest bigint NOT NULL DEFAULT 1,
    -- Bytes of the kept events' JSON.
    bytes bigint NOT NULL DEFAULT 0,
    cancel_requested boolean NOT NULL DEFAULT false,
    lease_ms bigint NOT NULL,
    created_at_ms bigint NOT NULL,
    finished_at_ms bigint,
    thread text
);

CREATE TABLE {schema}.events (
    key text NOT NULL REFERENCES {schema}.runs (key) ON DELETE CASCADE,
    seq bigint NOT NULL,
    event bytea NOT NULL,
    PRIMARY KEY (key, seq)
);
