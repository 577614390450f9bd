-- The interrupt ledger: one document per thread (owner, agent and thread id hashed into
-- its key), replaced by compare-and-swap on its version. Expired rows read as absent
-- and the sweep deletes them.
CREATE TABLE {schema}.interrupts (
    key text PRIMARY KEY,
    version bigint NOT NULL,
    doc bytea NOT NULL,
    expires_at_ms bigint NOT NULL
);
CREATE INDEX interrupts_expires_at ON {schema}.interrupts (expires_at_ms);
