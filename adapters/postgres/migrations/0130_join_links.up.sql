-- Join links (core/join, issue 26): each opens one queue's public join
-- page, where a customer takes a turn with their own phone. Only the
-- SHA-256 of the value is kept. Deleted with their queue.
CREATE TABLE join_links (
    id            text PRIMARY KEY,
    account_id    text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    queue_id      text NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
    label         text,
    hash          text NOT NULL UNIQUE,
    language      text,
    kiosk         boolean NOT NULL DEFAULT false,
    phone_region  text,
    created_at    timestamptz NOT NULL,
    revoked_at    timestamptz
);
CREATE INDEX join_links_queue_idx ON join_links (queue_id, id);
