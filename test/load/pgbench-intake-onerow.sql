-- pgbench-intake-qms-0240.sql with the run's number and line version on one row, bumped together by the draw: the
-- variant measured for issue 30 before migration 0250 built it (docs/scaling.md "Issue 30, fifth session: one row
-- per intake"; what qms sends now is pgbench-intake-qms.sql).
-- On the schema of pgbench-intake-onerow-setup.sql. Against the intake before 0250: the draw's upsert also bumps
-- turn_counters.line_version and returns it, so the line bump's upsert of turn_lines is gone and the line change
-- is a plain insert (its version a parameter in qms; here a look-up, pgbench having no value from a pipeline);
-- the webhook endpoints are read by the run's lock statement (joined), and the line and endpoints' statement is
-- gone. Compare with test/load/callgrind-intake.sh SEED_URL pgbench-intake-qms-0240.sql \
--   pgbench-intake-onerow.sql:pgbench-intake-onerow-setup.sql
\set i random(0, 49)
SELECT run, acc, que FROM bench_runs WHERE i = :i \gset
\startpipeline
BEGIN;
SELECT r.id, r.account_id, r.queue_id, r.status, r.intake_open, r.opened_at, r.closed_at, r.created_at, r.updated_at, q.view_version, coalesce((SELECT st.samples FROM queue_service_times AS st WHERE st.queue_id = q.id), '{}'), e.id, e.account_id, e.url, e.events, e.created_at FROM queue_runs AS r JOIN queues AS q ON q.id = r.queue_id LEFT JOIN webhook_endpoints AS e ON e.account_id = r.account_id WHERE r.id = :run ORDER BY e.id FOR NO KEY UPDATE OF r;
WITH c AS ( INSERT INTO turn_counters AS c (run_id, period, last_number, line_version) SELECT :run::text, ''::text, 1, 1 WHERE EXISTS (SELECT 1 FROM queue_runs WHERE id = :run AND account_id = :acc::text)  ON CONFLICT (run_id) DO UPDATE SET last_number = CASE WHEN c.period = EXCLUDED.period OR c.period = '' OR EXCLUDED.period = '' THEN c.last_number + 1 ELSE 1 END, period = EXCLUDED.period, line_version = c.line_version + 1 RETURNING last_number, line_version),
code AS MATERIALIZED (SELECT c.last_number AS n, c.line_version AS v, ''::text || CASE WHEN length(c.last_number::text) >= :pad::int THEN c.last_number::text ELSE lpad(c.last_number::text, :pad::int, '0') END AS code FROM c)
SELECT code.n, code.v, EXISTS (SELECT 1 FROM turns WHERE run_id = :run AND display_code = code.code AND (status NOT IN ('COMPLETED', 'CANCELLED') OR finished_at > :since)) AS held, nextval('turn_seq') AS seq FROM code;
\endpipeline
\startpipeline
INSERT INTO turns (id, account_id, queue_id, run_id, number, display_code, status, priority, priority_rank, seq, people_count, phone, notify_whatsapp, form_response, station_id, call_count, reentries, held_from, reopen_to, service_seconds, idempotency_key, request_hash, arrived_at, called_at, started_at, finished_at, created_at, updated_at, appointment_id)
VALUES ('turn_' || lpad(currval('turn_seq')::text, 22, '0'), :acc, :que, :run, currval('turn_seq'), currval('turn_seq')::text, 'WAITING', 'NORMAL', 2, currval('turn_seq'), 1, NULL, false, '{}', NULL, 0, 0, '', '', NULL, NULL, :hash, NULL, NULL, NULL, NULL, :now, :now, NULL);
INSERT INTO events (id, account_id, name, queue_id, run_id, data, occurred_at) VALUES ('evt_' || lpad(currval('turn_seq')::text, 22, '0'), :acc, 'turn.created', :que, :run, :data, :now);
INSERT INTO turn_line_changes (run_id, version, removed, added, reset) VALUES (:run, (SELECT line_version FROM turn_counters WHERE run_id = :run), :removed, ARRAY[currval('turn_seq')]::bigint[], false) RETURNING version;
END;
\endpipeline
