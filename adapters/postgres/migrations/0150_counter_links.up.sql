-- Counter links (core/counter, issue 28): each opens one queue's staff
-- console at /counter/{token} and does dispatch work on that queue only.
-- Only the SHA-256 of the value is kept. Deleted with their queue.
CREATE TABLE counter_links (
    id           text PRIMARY KEY,
    account_id   text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    queue_id     text NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
    label        text,
    hash         text NOT NULL UNIQUE,
    language     text,
    station_ids  text[] NOT NULL DEFAULT '{}',
    show_details boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL,
    revoked_at   timestamptz
);
CREATE INDEX counter_links_queue_idx ON counter_links (queue_id, id);

-- A console's presses: one per key per link (a double click finds the
-- first), and the turn's history at the counters.
CREATE TABLE counter_presses (
    id           text PRIMARY KEY,
    account_id   text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    link_id      text NOT NULL REFERENCES counter_links (id) ON DELETE CASCADE,
    queue_id     text NOT NULL,
    key          text NOT NULL,
    action       text NOT NULL,
    station_id   text,
    turn_id      text,
    request_hash text NOT NULL,
    at           timestamptz NOT NULL,
    CONSTRAINT counter_presses_key UNIQUE (link_id, key)
);
CREATE INDEX counter_presses_turn_idx ON counter_presses (turn_id, id) WHERE turn_id IS NOT NULL;
