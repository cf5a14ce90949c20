-- Accounts and their API keys: the control panel's side.
CREATE TABLE accounts (
    id          text PRIMARY KEY,
    name        text NOT NULL,
    plan        text NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);

CREATE TABLE api_keys (
    id          text PRIMARY KEY,
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name        text NOT NULL DEFAULT '',
    prefix      text NOT NULL,
    hash        text NOT NULL UNIQUE,
    scopes      text[] NOT NULL,
    created_at  timestamptz NOT NULL,
    revoked_at  timestamptz
);
CREATE INDEX api_keys_account_idx ON api_keys (account_id, id);

-- Entities (branches). The document holds the fields of spec 2.7; the
-- columns hold what queries filter and join on.
CREATE TABLE entities (
    id          text PRIMARY KEY,
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    doc         jsonb NOT NULL,
    created_at  timestamptz NOT NULL
);
CREATE INDEX entities_account_idx ON entities (account_id, id);

-- Queues: the settings of spec 2.1 live in the document, which is read and
-- written whole; deleting an entity deletes its queues and, through the
-- cascades below, everything under them.
CREATE TABLE queues (
    id          text PRIMARY KEY,
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    entity_id   text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    name        text NOT NULL,
    type        text NOT NULL,
    doc         jsonb NOT NULL,
    created_at  timestamptz NOT NULL
);
CREATE INDEX queues_account_idx ON queues (account_id, id);
CREATE INDEX queues_entity_idx ON queues (entity_id, id);

CREATE TABLE stations (
    id           text PRIMARY KEY,
    account_id   text NOT NULL,
    queue_id     text NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
    label        text NOT NULL,
    description  text,
    created_at   timestamptz NOT NULL
);
CREATE INDEX stations_queue_idx ON stations (queue_id, id);

CREATE TABLE queue_runs (
    id           text PRIMARY KEY,
    account_id   text NOT NULL,
    queue_id     text NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
    status       text NOT NULL,
    intake_open  boolean NOT NULL,
    opened_at    timestamptz,
    closed_at    timestamptz,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);
CREATE INDEX queue_runs_queue_idx ON queue_runs (queue_id, id DESC);

-- The event log: every domain event, written in the transaction of its
-- change. Webhook deliveries and the live stream read from it.
CREATE TABLE events (
    id           text PRIMARY KEY,
    account_id   text NOT NULL,
    name         text NOT NULL,
    queue_id     text,
    run_id       text,
    data         jsonb NOT NULL,
    occurred_at  timestamptz NOT NULL
);
CREATE INDEX events_account_idx ON events (account_id, id);
