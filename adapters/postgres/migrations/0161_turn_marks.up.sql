-- Turn marks (core/turns, issue 31): something that happens to a turn at
-- most once, recorded so that a job run twice (a River job rescued after
-- a crash between its commit and its completion) does not do it twice.
-- The first kind is "sla_wait": turn.sla_breached raised. Deleted with
-- the turn.
CREATE TABLE turn_marks (
    turn_id  text NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
    kind     text NOT NULL,
    at       timestamptz NOT NULL,
    PRIMARY KEY (turn_id, kind)
);
