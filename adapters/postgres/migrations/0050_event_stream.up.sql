-- The live event stream (core/stream, adapters/postgres/stream.go).
--
-- tx_id is the id of the transaction that wrote the event. The stream
-- delivers an account's events in (tx_id, id) order, and only those whose
-- transaction is older than every transaction of this database still
-- running: no event can commit later with a smaller tx_id, so a subscriber
-- never skips an event that committed late, and never sees one twice.
ALTER TABLE events ADD COLUMN tx_id xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX events_stream_idx ON events (account_id, tx_id, id);

-- Every process listening on qms_events hears of each event once its
-- transaction commits (NOTIFY is transactional: a rolled-back event is never
-- announced). The payload is "<account id> <event id>"; listeners use only
-- the account, then read the log.
CREATE FUNCTION qms_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('qms_events', NEW.account_id || ' ' || NEW.id);
    RETURN NULL;
END
$$;
CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION qms_events_notify();
