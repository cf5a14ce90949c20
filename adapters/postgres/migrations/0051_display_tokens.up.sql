-- Display tokens (core/display): each opens one queue run's waiting-room
-- board read-only. Only the SHA-256 of the value is kept. Deleted with their
-- run.
CREATE TABLE display_tokens (
    id            text PRIMARY KEY,
    account_id    text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    queue_id      text NOT NULL,
    run_id        text NOT NULL REFERENCES queue_runs (id) ON DELETE CASCADE,
    label         text,
    hash          text NOT NULL UNIQUE,
    created_at    timestamptz NOT NULL,
    revoked_at    timestamptz
);
CREATE INDEX display_tokens_run_idx ON display_tokens (run_id, id);

-- The board lists a run's last calls from the event log.
CREATE INDEX events_run_calls_idx ON events (run_id, id DESC) WHERE name = 'turn.called';
