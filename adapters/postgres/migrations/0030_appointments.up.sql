-- Appointment slots: one row per bookable window of a run. remaining is the
-- seat counter: bookings take a seat with a conditional decrement
-- (remaining > 0) and cancellations give it back (remaining < capacity); the
-- CHECK is the last line of defence, so no interleaving of statements can
-- leave a slot overbooked or above its capacity.
CREATE TABLE appointment_slots (
    id          text PRIMARY KEY,
    account_id  text NOT NULL,
    queue_id    text NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
    run_id      text NOT NULL REFERENCES queue_runs (id) ON DELETE CASCADE,
    local_date  text NOT NULL,
    timezone    text NOT NULL,
    starts_at   timestamptz NOT NULL,
    ends_at     timestamptz NOT NULL,
    capacity    integer NOT NULL,
    remaining   integer NOT NULL,
    created_at  timestamptz NOT NULL,
    CONSTRAINT appointment_slots_span CHECK (ends_at > starts_at),
    CONSTRAINT appointment_slots_capacity CHECK (capacity BETWEEN 1 AND 1000),
    CONSTRAINT appointment_slots_remaining CHECK (remaining BETWEEN 0 AND capacity)
);
-- Listing a run's slots in time order, the overlap check, and paging.
CREATE INDEX appointment_slots_run_idx ON appointment_slots (run_id, starts_at, id);
-- Next available: the earliest slot of the run with a seat left, found
-- without walking past the full ones.
CREATE INDEX appointment_slots_open_idx ON appointment_slots (run_id, starts_at, id) WHERE remaining > 0;

CREATE TABLE appointments (
    id               text PRIMARY KEY,
    account_id       text NOT NULL,
    queue_id         text NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
    run_id           text NOT NULL REFERENCES queue_runs (id) ON DELETE CASCADE,
    slot_id          text NOT NULL REFERENCES appointment_slots (id) ON DELETE CASCADE,
    slot_start       timestamptz NOT NULL,
    slot_end         timestamptz NOT NULL,
    local_date       text NOT NULL,
    status           text NOT NULL,
    customer_name    text,
    phone            text,
    notes            text,
    form_response    jsonb NOT NULL DEFAULT '{}',
    idempotency_key  text,
    request_hash     text NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    checked_in_at    timestamptz,
    started_at       timestamptz,
    completed_at     timestamptz,
    cancelled_at     timestamptz,
    no_show_at       timestamptz
);
-- A key makes one appointment per account: concurrent requests with one key
-- meet here, and the loser finds the winner's appointment.
CREATE UNIQUE INDEX appointments_idempotency_key ON appointments (account_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX appointments_run_idx ON appointments (run_id, slot_start, id);
CREATE INDEX appointments_slot_idx ON appointments (slot_id);
