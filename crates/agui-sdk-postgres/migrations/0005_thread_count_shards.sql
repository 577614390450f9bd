-- The thread count in shards: each connection counts its threads' creations and
-- deletions in a shard of its own (its backend's pid modulo the shards), so that new
-- threads made on different connections do not wait for one another's commits, as
-- they did on the single row before. The count is the shards' sum.
--
-- A creation that finds the store close to its thread cap (fewer free places than
-- shards: as many creations may be in flight, uncommitted, one per shard) counts
-- again exactly: in a transaction that sets agui.thread_count_exact, the trigger
-- first locks every shard, in order, so that the creations in flight commit (or not)
-- before it reads the sum. The cap is kept exactly, as before.
DROP TABLE {schema}.thread_count;
CREATE TABLE {schema}.thread_count (
    shard integer PRIMARY KEY,
    n bigint NOT NULL
);
INSERT INTO {schema}.thread_count (shard, n) SELECT s, 0 FROM generate_series(0, 15) s;
UPDATE {schema}.thread_count SET n = (SELECT count(*) FROM {schema}.threads) WHERE shard = 0;

CREATE OR REPLACE FUNCTION {schema}.thread_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('agui.thread_count_exact', true) = 'on' THEN
        PERFORM 1 FROM {schema}.thread_count ORDER BY shard FOR UPDATE;
    END IF;
    UPDATE {schema}.thread_count
        SET n = n + CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END
        WHERE shard = pg_backend_pid() % 16;
    RETURN NULL;
END $$;
