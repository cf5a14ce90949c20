-- Forwards of turns through queue links. The unique (from_turn_id,
-- link_id) is what makes a turn follow a link at most once, however often
-- its job runs. link_id is no foreign key: deleting a link keeps the
-- record of what it forwarded (and a pending forward then fails visibly).
CREATE TABLE queue_forwards (
    id              text PRIMARY KEY,
    account_id      text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    link_id         text NOT NULL,
    from_turn_id    text NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
    from_queue_id   text NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
    from_run_id     text NOT NULL,
    to_queue_id     text NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
    trigger         text NOT NULL CHECK (trigger IN ('complete', 'manual')),
    status          text NOT NULL CHECK (status IN ('PENDING', 'FORWARDED', 'FAILED')),
    to_turn_id      text REFERENCES turns (id) ON DELETE SET NULL,
    to_run_id       text,
    attempts        integer NOT NULL DEFAULT 0,
    error_code      text,
    error_message   text,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    forwarded_at    timestamptz,
    failed_at       timestamptz,
    UNIQUE (from_turn_id, link_id)
);
CREATE INDEX queue_forwards_link_idx ON queue_forwards (link_id, id);
-- Analytics: turns forwarded out of a queue in a period.
CREATE INDEX queue_forwards_from_queue_idx ON queue_forwards (from_queue_id, forwarded_at) WHERE status = 'FORWARDED';
