-- Turns (spec 2.3) and the per-run rows that number and order them. See
-- docs/turns.md for the state machine and how positions stay cheap.
CREATE TABLE turns (
    id               text PRIMARY KEY,
    account_id       text NOT NULL,
    queue_id         text NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
    run_id           text NOT NULL REFERENCES queue_runs (id) ON DELETE CASCADE,
    number           integer NOT NULL,
    display_code     text NOT NULL,
    status           text NOT NULL,
    priority         text NOT NULL,
    -- The line is (priority_rank, seq): VERY_HIGH 0 ... LOW 3, then
    -- arrival. Kept beside priority so the dispatch index can order by it.
    priority_rank    smallint NOT NULL,
    seq              bigint NOT NULL,
    people_count     integer NOT NULL,
    phone            text,
    notify_whatsapp  boolean NOT NULL,
    form_response    jsonb NOT NULL,
    -- Deleting a station unassigns it; the turn keeps its history.
    station_id       text REFERENCES stations (id) ON DELETE SET NULL,
    call_count       integer NOT NULL,
    reentries        integer NOT NULL,
    held_from        text NOT NULL,
    reopen_to        text NOT NULL,
    service_seconds  double precision,
    idempotency_key  text,
    request_hash     text NOT NULL,
    arrived_at       timestamptz,
    called_at        timestamptz,
    started_at       timestamptz,
    finished_at      timestamptz,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);

-- dispatch/next: SELECT ... WHERE run_id AND status = 'WAITING' ORDER BY
-- priority_rank, seq LIMIT 1 FOR UPDATE SKIP LOCKED reads the head of this
-- index; the line snapshot behind positions is an index-only scan of it.
CREATE INDEX turns_line_idx ON turns (run_id, status, priority_rank, seq);
-- Lists of a run, paged by id.
CREATE INDEX turns_run_idx ON turns (run_id, id);
CREATE INDEX turns_arrivals_idx ON turns (run_id, id) WHERE arrived_at IS NOT NULL;
-- A repeated create finds its turn; concurrent creates with one key make
-- one turn. Kept as long as the turn, so well past the 24 hours promised.
CREATE UNIQUE INDEX turns_idempotency_idx ON turns (account_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
-- A station serves one turn at a time, whatever races the service's check.
CREATE UNIQUE INDEX turns_station_busy_idx ON turns (station_id) WHERE status IN ('CALLED', 'IN_SERVICE');
-- The wait estimate's moving average: the queue's latest service times.
CREATE INDEX turns_service_idx ON turns (queue_id, finished_at DESC) WHERE service_seconds IS NOT NULL;

-- One counter per run and numbering day ('' without daily reset),
-- incremented in the intake's transaction: a rolled-back intake gives its
-- number back, so committed numbers have no gap and no duplicate.
CREATE TABLE turn_numbers (
    run_id       text NOT NULL REFERENCES queue_runs (id) ON DELETE CASCADE,
    day          text NOT NULL,
    last_number  integer NOT NULL,
    PRIMARY KEY (run_id, day)
);

-- The line version of a run, bumped in the transaction of every change to
-- its WAITING turns; processes cache the ordered line per version.
CREATE TABLE turn_lines (
    run_id   text PRIMARY KEY REFERENCES queue_runs (id) ON DELETE CASCADE,
    version  bigint NOT NULL
);

-- Arrival order across the database. Gaps are harmless: seq only orders.
CREATE SEQUENCE turn_seq;
