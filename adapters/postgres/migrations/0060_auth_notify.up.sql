-- Authentication changes (issue 14): every change to an account (its plan)
-- or an API key (its revocation) is announced on the qms_auth channel when
-- its transaction commits, so every process drops its cached authentication
-- results at once (AuthListener). Statement-level: one notification per
-- statement, and NOTIFY folds duplicates within a transaction.
CREATE FUNCTION qms_auth_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('qms_auth', TG_TABLE_NAME);
    RETURN NULL;
END;
$$;

CREATE TRIGGER accounts_auth_changed AFTER UPDATE OR DELETE ON accounts
    FOR EACH STATEMENT EXECUTE FUNCTION qms_auth_changed();
CREATE TRIGGER api_keys_auth_changed AFTER UPDATE OR DELETE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION qms_auth_changed();
