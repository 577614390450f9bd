-- A run's events go with it by a statement trigger instead of the foreign key: the key
-- checked per inserted event (one lookup of the run's row each, the most of a large
-- batch's append) is no longer needed, since only the append inserts events, in the
-- statement that locks the run's row (an append to a run deleted meanwhile finds no
-- row and inserts nothing). Whatever deletes runs deletes their events in the same
-- statement, as ON DELETE CASCADE did; the trigger reads the events with a snapshot of
-- its own, so the events of an append that committed while the delete waited for the
-- run's row go too.
ALTER TABLE {schema}.events DROP CONSTRAINT events_key_fkey;

CREATE FUNCTION {schema}.run_events_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {schema}.events e USING gone g WHERE e.key = g.key;
    RETURN NULL;
END $$;
CREATE TRIGGER runs_events_gone AFTER DELETE ON {schema}.runs
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION {schema}.run_events_gone();
