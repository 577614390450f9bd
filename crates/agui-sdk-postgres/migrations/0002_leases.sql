-- Leases: a running run's producer renews its lease; a run whose lease ran out is
-- taken over by another replica's reaper. Times are the database's clock.
ALTER TABLE {schema}.runs ADD COLUMN lease_until_ms bigint NOT NULL DEFAULT 0;
UPDATE {schema}.runs SET lease_until_ms = created_at_ms + lease_ms WHERE status = 'running';
-- The expired leases, found without reading the ended runs.
CREATE INDEX runs_lease_until ON {schema}.runs (lease_until_ms) WHERE status = 'running';
