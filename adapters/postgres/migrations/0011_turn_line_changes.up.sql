-- What each version of a run's line changed, written in the transaction
-- that bumped turn_lines.version: a process whose cached line is a few
-- versions old patches it from here instead of reading the whole line
-- again. A key is priority_rank << 56 | seq. Only the latest changes of a
-- run are kept (turns.LineChangesKept); a reader that needs older ones
-- reloads the line.
CREATE TABLE turn_line_changes (
    run_id   text   NOT NULL REFERENCES queue_runs (id) ON DELETE CASCADE,
    version  bigint NOT NULL,
    removed  bigint[] NOT NULL,
    added    bigint[] NOT NULL,
    reset    boolean NOT NULL,
    PRIMARY KEY (run_id, version)
);
