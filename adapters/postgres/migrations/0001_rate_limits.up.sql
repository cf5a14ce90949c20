-- Request counts per key and fixed one-minute window, shared by every qms
-- process on this database (see postgres.RateLimiter).
CREATE TABLE rate_limits (
    key          text        NOT NULL,
    window_start timestamptz NOT NULL,
    count        integer     NOT NULL,
    PRIMARY KEY (key, window_start)
);

-- Pruning deletes by window alone; the primary key leads with the key.
CREATE INDEX rate_limits_window_start_idx ON rate_limits (window_start);
