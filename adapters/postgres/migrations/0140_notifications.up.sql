-- Customer notifications (core/notify, docs/notifications.md).
--
-- One row per message: turn, moment and occurrence make its key, unique, so
-- a decision repeated (a retried transaction, a replayed job) stores
-- nothing more and schedules no second job. phone is the E.164 number,
-- cleared by retention (notify.keep_phones) once the turn is long over.
--
-- No foreign key to turns: the check of one takes FOR KEY SHARE on the
-- turn's row until the commit, and dispatch/next takes the first waiting
-- turn FOR UPDATE SKIP LOCKED, so recording a message would make next skip
-- that turn (the history checker caught it). Rows go with their queue.
CREATE TABLE notifications (
    id                  text PRIMARY KEY,
    account_id          text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    turn_id             text NOT NULL,
    queue_id            text NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
    run_id              text NOT NULL,
    key                 text NOT NULL UNIQUE,
    moment              text NOT NULL,
    occurrence          integer NOT NULL,
    channel             text NOT NULL,
    phone               text NOT NULL,
    language            text NOT NULL,
    params              jsonb NOT NULL DEFAULT '{}',
    body                text NOT NULL DEFAULT '',
    provider            text NOT NULL DEFAULT '',
    provider_message_id text,
    status              text NOT NULL,
    error_code          text,
    error               text,
    attempts            integer NOT NULL DEFAULT 0,
    fallback_of         text,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    sent_at             timestamptz
);
CREATE INDEX notifications_turn_idx ON notifications (turn_id, created_at);
-- Status callbacks find their message by the provider's id.
CREATE UNIQUE INDEX notifications_provider_idx ON notifications (provider, provider_message_id)
    WHERE provider_message_id IS NOT NULL;
-- A reply finds the newest message to its number; retention the oldest
-- numbers still kept.
CREATE INDEX notifications_phone_idx ON notifications (phone, created_at DESC) WHERE phone <> '';
CREATE INDEX notifications_created_idx ON notifications (created_at) WHERE phone <> '';

-- The numbers that replied STOP to an account: nothing is sent to them
-- until they reply START.
CREATE TABLE notification_suppressions (
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    phone       text NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (account_id, phone)
);

-- Where each waiting turn with a phone stands with its near-the-front
-- message (re-armed when the turn moves back). No foreign key to turns,
-- as above.
CREATE TABLE notification_near (
    turn_id     text PRIMARY KEY,
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    occurrence  integer NOT NULL,
    sent        boolean NOT NULL
);

-- A queue's notification settings (PUT /queues/{queueId}/notifications);
-- no row: the operator's defaults.
CREATE TABLE notification_settings (
    queue_id    text PRIMARY KEY REFERENCES queues (id) ON DELETE CASCADE,
    account_id  text NOT NULL,
    settings    jsonb NOT NULL
);

-- Privacy: the periodic job notify.clear_phones forgets the phone of turns
-- finished more than notify.keep_phones ago; this finds them.
CREATE INDEX turns_phone_finished_idx ON turns (finished_at) WHERE phone IS NOT NULL;
