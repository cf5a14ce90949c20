-- Which turn took which access code, with the code's classification and
-- properties as they were at intake. One row per turn, gone with it. The
-- code may go (its entity or queue deleted) while the turn stays, so the
-- code is no foreign key here.
CREATE TABLE access_code_turns (
    turn_id         text PRIMARY KEY REFERENCES turns (id) ON DELETE CASCADE,
    access_code_id  text NOT NULL,
    code            text NOT NULL,
    account_id      text NOT NULL,
    queue_id        text NOT NULL,
    run_id          text NOT NULL,
    prefix          text,
    priority        text,
    classification  text,
    properties      jsonb NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL
);
-- carpool.oneActiveTurnPerCode: the code's turns in a queue.
CREATE INDEX access_code_turns_code_idx ON access_code_turns (access_code_id, queue_id);
