-- Connected queues (spec 2.8). A link goes when either of its queues goes.
-- Conditions are read and written whole with the link, so they live in a
-- document; the columns are what forwarding looks links up by.
CREATE TABLE queue_links (
    id                 text PRIMARY KEY,
    account_id         text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    from_queue_id      text NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
    to_queue_id        text NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
    trigger            text NOT NULL CHECK (trigger IN ('complete', 'manual')),
    keep_number        boolean NOT NULL,
    keep_form_response boolean NOT NULL,
    conditions         jsonb NOT NULL DEFAULT '[]',
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    CHECK (from_queue_id <> to_queue_id)
);
CREATE INDEX queue_links_account_idx ON queue_links (account_id, id);
CREATE INDEX queue_links_from_idx ON queue_links (from_queue_id, id);
CREATE INDEX queue_links_to_idx ON queue_links (to_queue_id);
