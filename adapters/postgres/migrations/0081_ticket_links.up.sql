-- Ticket links (core/ticket, issue 15): each opens one turn's live ticket
-- page. Only the SHA-256 of the value is kept. Deleted with their turn.
CREATE TABLE ticket_links (
    id          text PRIMARY KEY,
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    turn_id     text NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
    queue_id    text NOT NULL,
    run_id      text NOT NULL,
    hash        text NOT NULL UNIQUE,
    language    text,
    created_at  timestamptz NOT NULL
);
CREATE INDEX ticket_links_turn_idx ON ticket_links (turn_id);
