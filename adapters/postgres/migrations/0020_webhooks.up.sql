-- Webhook endpoints: the account's subscriptions. secret holds the signing
-- secret sealed with AES-256-GCM under webhooks.secret_key ("v1:..."), or in
-- clear ("plain:...") when no key is configured.
CREATE TABLE webhook_endpoints (
    id          text PRIMARY KEY,
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    url         text NOT NULL,
    events      text[] NOT NULL,
    secret      text NOT NULL,
    created_at  timestamptz NOT NULL
);
CREATE INDEX webhook_endpoints_account_idx ON webhook_endpoints (account_id, id);

-- Deliveries: one per (event, subscribed endpoint), deleted with their
-- endpoint, which is how deleting an endpoint stops its pending attempts.
-- body is bytea, not jsonb, so every attempt sends the exact bytes signed
-- the first time.
CREATE TABLE webhook_deliveries (
    id                    text PRIMARY KEY,
    account_id            text NOT NULL,
    endpoint_id           text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id              text NOT NULL,
    event                 text NOT NULL,
    body                  bytea NOT NULL,
    status                text NOT NULL,
    attempts              integer NOT NULL DEFAULT 0,
    last_response_status  integer,
    last_error            text,
    last_attempt_at       timestamptz,
    next_attempt_at       timestamptz,
    retry_token           text NOT NULL DEFAULT '',
    created_at            timestamptz NOT NULL
);
-- The delivery log reads an account's newest deliveries first.
CREATE INDEX webhook_deliveries_account_idx ON webhook_deliveries (account_id, id DESC);
-- Deleting an endpoint finds its deliveries.
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id);
