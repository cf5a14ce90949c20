-- The rate limit leases slices (postgres.RateLimiter): one statement grants
-- a process up to n requests of a key at once, and this column is how many
-- the last one granted (read back by RETURNING). A key's buckets keep
-- counting what was granted, so the total across processes never exceeds
-- the limit. The default makes the change instant on the UNLOGGED table.
ALTER TABLE rate_limits ADD COLUMN granted integer NOT NULL DEFAULT 0;
