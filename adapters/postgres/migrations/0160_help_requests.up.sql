-- Help requests (core/ticket, issue 31): a customer's "I need help" from
-- the ticket page, answered by staff with one of the queue's
-- help.quickReplies. At most one OPEN request per turn (the partial
-- unique index), which is what makes two taps at once one request.
-- Deleted with their turn.
CREATE TABLE help_requests (
    id            text PRIMARY KEY,
    account_id    text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    turn_id       text NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
    queue_id      text NOT NULL,
    run_id        text NOT NULL,
    display_code  text NOT NULL,
    status        text NOT NULL,
    reply         text,
    requested_at  timestamptz NOT NULL,
    answered_at   timestamptz
);
CREATE UNIQUE INDEX help_requests_open_idx ON help_requests (turn_id) WHERE status = 'OPEN';
CREATE INDEX help_requests_turn_idx ON help_requests (turn_id, id);
CREATE INDEX help_requests_run_idx ON help_requests (run_id, id);
