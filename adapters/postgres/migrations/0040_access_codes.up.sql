-- Access codes (spec 2.6). A code is unique per account: the unique index
-- is what refuses a duplicate inserted by a concurrent request. The scope
-- lives in two nullable foreign keys, rather than one polymorphic scope_id,
-- so that deleting the entity or queue a code is scoped to deletes the code
-- with it (a code for a place that no longer exists can never be used).
CREATE TABLE access_codes (
    id              text PRIMARY KEY,
    account_id      text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    code            text NOT NULL,
    scope_type      text NOT NULL CHECK (scope_type IN ('account', 'entity', 'queue')),
    scope_entity_id text REFERENCES entities (id) ON DELETE CASCADE,
    scope_queue_id  text REFERENCES queues (id) ON DELETE CASCADE,
    max_uses        integer CHECK (max_uses > 0),
    uses            integer NOT NULL DEFAULT 0 CHECK (uses >= 0),
    expires_at      timestamptz,
    prefix          text,
    classification  text,
    priority        text,
    properties      jsonb NOT NULL DEFAULT '{}',
    enabled         boolean NOT NULL,
    disabled_at     timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    -- The use budget holds in the database too: a use beyond max_uses
    -- cannot commit whatever the code above does.
    CHECK (max_uses IS NULL OR uses <= max_uses),
    CHECK ((scope_type = 'entity') = (scope_entity_id IS NOT NULL)),
    CHECK ((scope_type = 'queue') = (scope_queue_id IS NOT NULL))
);
CREATE UNIQUE INDEX access_codes_account_code_idx ON access_codes (account_id, code);
CREATE INDEX access_codes_account_idx ON access_codes (account_id, id);
CREATE INDEX access_codes_entity_idx ON access_codes (scope_entity_id) WHERE scope_entity_id IS NOT NULL;
CREATE INDEX access_codes_queue_idx ON access_codes (scope_queue_id) WHERE scope_queue_id IS NOT NULL;
