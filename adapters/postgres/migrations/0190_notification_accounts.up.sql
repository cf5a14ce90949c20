-- Per-account messaging settings (core/notify account.go,
-- PUT /api/v1/notification-settings; docs/notifications.md).
--
-- settings holds what may be shown (providers, senders, templates, quiet
-- hours, send rate); secrets holds the provider secrets (Twilio's auth
-- token, the Cloud API's token, app secret and verify token) as one JSON
-- document sealed with AES-256-GCM under webhooks.secret_key, like webhook
-- signing secrets (v1:...; the account id is the seal's additional data).
-- No row: the operator's configuration (notify.*) serves the account.
CREATE TABLE notification_accounts (
    account_id  text PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    settings    jsonb NOT NULL,
    secrets     text NOT NULL,
    updated_at  timestamptz NOT NULL
);

-- The language a turn's customer used (the join page's): the turn's
-- messages go in it. Written in the intake's transaction; no foreign key
-- to turns, for the reason 0140 gives (a key share on a waiting turn makes
-- dispatch/next skip it). notify.clear_phones deletes rows older than
-- notify.keep_phones, with the numbers.
CREATE TABLE notification_turn_languages (
    turn_id     text PRIMARY KEY,
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    language    text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notification_turn_languages_created_idx ON notification_turn_languages (created_at);

-- A reply that reached an account's own callback concerns the newest
-- message that account sent to the number.
CREATE INDEX notifications_account_phone_idx ON notifications (account_id, phone, created_at DESC) WHERE phone <> '';
