-- The rate limit counts each key's requests of the last minute in
-- one-second buckets (a sliding window: a request counts from its second
-- until a minute after that second ends), so no 60 s ever holds more than
-- the limit, across a minute boundary too. A key's row holds at most 61
-- buckets, whatever the limit. UNLOGGED: a request spends its budget
-- without waiting for a WAL flush. A crash empties the table, and every
-- budget restarts full; that is the whole cost (see docs/decisions.md).
DROP TABLE rate_limits;
CREATE UNLOGGED TABLE rate_limits (
    key        text        PRIMARY KEY,
    -- The Unix seconds holding counted requests, ascending, and how many
    -- each holds.
    secs       bigint[]    NOT NULL,
    counts     integer[]   NOT NULL,
    -- Whether the last request was let through (read back by RETURNING).
    allowed    boolean     NOT NULL,
    updated_at timestamptz NOT NULL
);

-- Pruning deletes keys idle for a minute.
CREATE INDEX rate_limits_updated_at_idx ON rate_limits (updated_at);
