-- Events are announced on qms_events after their transaction commits, by
-- the process that wrote them (adapters/postgres/announce.go), instead of
-- by a trigger inside the transaction: PostgreSQL serialises the commits
-- of transactions that NOTIFY, so every intake waited for the previous
-- one's WAL flush (issue 16).
DROP TRIGGER events_notify ON events;
DROP FUNCTION qms_events_notify();
