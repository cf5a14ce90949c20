-- qms's intake as it was before migration 0250 (main at 5ceb2da), replayed by pgbench as pgbench-intake-qms.sql
-- replays today's: BEGIN, the run's lock, the line and endpoints, the number's draw; the turn, the event, the line
-- bump, COMMIT. For a database at migration 0240 (a seed made before 0250); kept to compare, like for like, with
-- pgbench-intake-qms.sql on the same seed migrated to 0250 (docs/scaling.md, "Issue 30, fifth session: one row per
-- intake", built). Values as there: the draw's number and seq come back with \gset, so the draw is sent on its own
-- (the fourth session's copy of this replay drew in the lock's pipeline and read them back with currval, 1,413,693
-- instructions per intake against this one's 1,396,862 on the same seed).
\set i random(0, 49)
SELECT run, acc, que FROM bench_runs WHERE i = :i \gset
\startpipeline
BEGIN;
SELECT r.id, r.account_id, r.queue_id, r.status, r.intake_open, r.opened_at, r.closed_at,
r.created_at, r.updated_at, q.view_version, coalesce((SELECT st.samples FROM queue_service_times AS st WHERE st.queue_id = q.id), '{}') FROM queue_runs AS r JOIN queues AS q ON q.id = r.queue_id WHERE r.id = :run FOR NO KEY UPDATE OF r;
SELECT l.version, e.id, e.account_id, e.url, e.events, e.created_at FROM (SELECT coalesce((SELECT version FROM turn_lines WHERE run_id = :run), 0) AS version) AS l LEFT JOIN webhook_endpoints AS e ON e.account_id = (SELECT account_id FROM queue_runs WHERE id = :run) ORDER BY e.id;
\endpipeline
WITH c AS ( INSERT INTO turn_counters AS c (run_id, period, last_number) SELECT :run::text, ''::text, 1 WHERE EXISTS (SELECT 1 FROM queue_runs WHERE id = :run AND account_id = :acc::text)  ON CONFLICT (run_id) DO UPDATE SET last_number = CASE WHEN c.period = EXCLUDED.period OR c.period = '' OR EXCLUDED.period = '' THEN c.last_number + 1 ELSE 1 END, period = EXCLUDED.period RETURNING last_number),
code AS MATERIALIZED (SELECT c.last_number AS n, ''::text || CASE WHEN length(c.last_number::text) >= :pad::int THEN c.last_number::text ELSE lpad(c.last_number::text, :pad::int, '0') END AS code FROM c)
SELECT code.n, EXISTS (SELECT 1 FROM turns WHERE run_id = :run AND display_code = code.code AND (status NOT IN ('COMPLETED', 'CANCELLED') OR finished_at > :since)) AS held, nextval('turn_seq') AS seq FROM code \gset
\startpipeline
INSERT INTO turns (id, account_id, queue_id, run_id, number, display_code, status, priority, priority_rank, seq, people_count, phone, notify_whatsapp, form_response, station_id, call_count, reentries, held_from, reopen_to, service_seconds, idempotency_key, request_hash, arrived_at, called_at, started_at, finished_at, created_at, updated_at, appointment_id)
VALUES ('turn_' || lpad(:seq::text, 22, '0'), :acc, :que, :run, :seq, :seq::text, 'WAITING', 'NORMAL', 2, :seq, 1, NULL, false, '{}', NULL, 0, 0, '', '', NULL, NULL, :hash, NULL, NULL, NULL, NULL, :now, :now, NULL);
INSERT INTO events (id, account_id, name, queue_id, run_id, data, occurred_at) VALUES ('evt_' || lpad(:seq::text, 22, '0'), :acc, 'turn.created', :que, :run, :data, :now);
WITH v AS ( INSERT INTO turn_lines (run_id, version) VALUES (:run, 1) ON CONFLICT (run_id) DO UPDATE SET version = turn_lines.version + 1 RETURNING version)
INSERT INTO turn_line_changes (run_id, version, removed, added, reset) SELECT :run, CASE WHEN nullif(:nul, 'x')::bigint IS NULL OR v.version = nullif(:nul, 'x')::bigint THEN v.version END, :removed, ARRAY[:seq]::bigint[], false FROM v RETURNING version;
END;
\endpipeline
