-- The thread index: threads as an index over the runs. Keys are compared by their
-- bytes (COLLATE "C"), as the other stores order them.
CREATE TABLE {schema}.threads (
    key text COLLATE "C" PRIMARY KEY,
    -- The owner's scope: the key's text before its '.'.
    owner text COLLATE "C" NOT NULL,
    thread_id text NOT NULL,
    -- The agent of its latest run.
    agent text COLLATE "C" NOT NULL,
    -- Its running run, if any (cleared when that run ends), and that run's id.
    live text COLLATE "C",
    live_run text,
    -- Its latest run: its log goes when the next run starts.
    last_run text COLLATE "C",
    -- Set when its first run ends (then it is listed), and on every later change.
    created_at_ms bigint,
    updated_at_ms bigint,
    last_run_at_ms bigint,
    name text,
    archived boolean NOT NULL DEFAULT false,
    -- Its last write: it is forgotten when idle past the store's thread_idle_ttl.
    touched_at_ms bigint NOT NULL,
    -- The compacted events and bytes of its history, against the history's bounds.
    hist_events bigint NOT NULL DEFAULT 0,
    hist_bytes bigint NOT NULL DEFAULT 0
);

-- The owners' lists, in their order, one index per filter: an owner's threads,
-- archived or not; and by agent. Keyset pages read each from the cursor on.
CREATE INDEX threads_list ON {schema}.threads
    (owner, archived, last_run_at_ms DESC, key DESC) WHERE last_run_at_ms IS NOT NULL;
CREATE INDEX threads_list_agent ON {schema}.threads
    (owner, agent, archived, last_run_at_ms DESC, key DESC) WHERE last_run_at_ms IS NOT NULL;
-- The longest idle first: eviction past the thread cap and the idle sweep.
CREATE INDEX threads_idle ON {schema}.threads (touched_at_ms);
CREATE INDEX threads_owner_idle ON {schema}.threads (owner, touched_at_ms);

-- Each ended run of a thread, compacted, in order.
CREATE TABLE {schema}.thread_history (
    thread text COLLATE "C" NOT NULL REFERENCES {schema}.threads (key) ON DELETE CASCADE,
    n bigint GENERATED ALWAYS AS IDENTITY,
    events bytea NOT NULL,
    count bigint NOT NULL,
    PRIMARY KEY (thread, n)
);

-- The ids of the messages a thread's history records.
CREATE TABLE {schema}.thread_message_ids (
    thread text COLLATE "C" NOT NULL REFERENCES {schema}.threads (key) ON DELETE CASCADE,
    id text NOT NULL,
    PRIMARY KEY (thread, id)
);

-- How many threads the store holds, kept by triggers: the thread cap reads one row.
CREATE TABLE {schema}.thread_count (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    n bigint NOT NULL
);
INSERT INTO {schema}.thread_count (n) SELECT count(*) FROM {schema}.threads;

CREATE FUNCTION {schema}.thread_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE {schema}.thread_count SET n = n + 1;
    ELSE
        UPDATE {schema}.thread_count SET n = n - 1;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER threads_counted AFTER INSERT OR DELETE ON {schema}.threads
    FOR EACH ROW EXECUTE FUNCTION {schema}.thread_counted();

-- Finished runs expire by their end time.
CREATE INDEX runs_finished ON {schema}.runs (finished_at_ms) WHERE finished_at_ms IS NOT NULL;
