-- The rate limit counts each key's requests of the last minute (a sliding
-- log: their times), so no 60 s ever holds more than the limit, across a
-- minute boundary too. UNLOGGED: a request spends its budget without
-- waiting for a WAL flush. A crash empties the table, and every budget
-- restarts full; that is the whole cost (see docs/decisions.md).
DROP TABLE rate_limits;
CREATE UNLOGGED TABLE rate_limits (
    key        text          PRIMARY KEY,
    -- The times of the requests counted in the last minute, oldest first.
    hits       timestamptz[] NOT NULL,
    -- Whether the last request was let through (read back by RETURNING).
    allowed    boolean       NOT NULL,
    updated_at timestamptz   NOT NULL
);

-- Pruning deletes keys idle for a minute.
CREATE INDEX rate_limits_updated_at_idx ON rate_limits (updated_at);
