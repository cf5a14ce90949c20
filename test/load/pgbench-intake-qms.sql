-- qms's own intake (POST /queue-runs/{id}/turns, no idempotency key) replayed by pgbench: the statements qms sends,
-- in its two pipelines (BEGIN, the run's lock, the line and endpoints, the number's draw; the turn, the event, the
-- line bump, COMMIT), prepared (-M prepared) with the values as parameters, so PostgreSQL's side of an intake can be
-- measured without qms (docs/scaling.md, "Issue 30, fourth session"). Run it on a copy of a database cpu_per_req.sh
-- or ratios.sh seeded, after:
--   CREATE TABLE bench_runs AS SELECT (row_number() OVER (ORDER BY id))::int - 1 AS i, id AS run,
--     account_id AS acc, queue_id AS que FROM queue_runs;
-- with
--   pgbench -n -M prepared -c 16 -j 2 -T 10 -f test/load/pgbench-intake-qms.sql -D nul=x -D pad=3 \
--     -D "since=2026-01-01 00:00:00+00" -D "now=2026-01-01 00:05:00+00" -D hash=0123abcd -D 'removed={}' \
--     -D 'data={"number":1,"status":"WAITING"}' DBURL
-- (-c 1 -t N under valgrind --tool=callgrind counts its instructions). The turn's and the event's ids, its
-- number and seq come from currval('turn_seq'), which the draw advanced; the bump's null $5 is nullif(:nul, 'x').
\set i random(0, 49)
SELECT run, acc, que FROM bench_runs WHERE i = :i \gset
\startpipeline
BEGIN;
SELECT r.id, r.account_id, r.queue_id, r.status, r.intake_open, r.opened_at, r.closed_at,
r.created_at, r.updated_at, q.view_version, coalesce((SELECT st.samples FROM queue_service_times AS st WHERE st.queue_id = q.id), '{}') FROM queue_runs AS r JOIN queues AS q ON q.id = r.queue_id WHERE r.id = :run FOR NO KEY UPDATE OF r;
SELECT l.version, e.id, e.account_id, e.url, e.events, e.created_at FROM (SELECT coalesce((SELECT version FROM turn_lines WHERE run_id = :run), 0) AS version) AS l LEFT JOIN webhook_endpoints AS e ON e.account_id = (SELECT account_id FROM queue_runs WHERE id = :run) ORDER BY e.id;
WITH c AS ( INSERT INTO turn_counters AS c (run_id, period, last_number) SELECT :run::text, ''::text, 1 WHERE EXISTS (SELECT 1 FROM queue_runs WHERE id = :run AND account_id = :acc::text)  ON CONFLICT (run_id) DO UPDATE SET last_number = CASE WHEN c.period = EXCLUDED.period OR c.period = '' OR EXCLUDED.period = '' THEN c.last_number + 1 ELSE 1 END, period = EXCLUDED.period RETURNING last_number),
code AS MATERIALIZED (SELECT c.last_number AS n, ''::text || CASE WHEN length(c.last_number::text) >= :pad::int THEN c.last_number::text ELSE lpad(c.last_number::text, :pad::int, '0') END AS code FROM c)
SELECT code.n, EXISTS (SELECT 1 FROM turns WHERE run_id = :run AND display_code = code.code AND (status NOT IN ('COMPLETED', 'CANCELLED') OR finished_at > :since)) AS held, nextval('turn_seq') AS seq FROM code;
\endpipeline
\startpipeline
INSERT INTO turns (id, account_id, queue_id, run_id, number, display_code, status, priority, priority_rank, seq, people_count, phone, notify_whatsapp, form_response, station_id, call_count, reentries, held_from, reopen_to, service_seconds, idempotency_key, request_hash, arrived_at, called_at, started_at, finished_at, created_at, updated_at, appointment_id)
VALUES ('turn_' || lpad(currval('turn_seq')::text, 22, '0'), :acc, :que, :run, currval('turn_seq'), currval('turn_seq')::text, 'WAITING', 'NORMAL', 2, currval('turn_seq'), 1, NULL, false, '{}', NULL, 0, 0, '', '', NULL, NULL, :hash, NULL, NULL, NULL, NULL, :now, :now, NULL);
INSERT INTO events (id, account_id, name, queue_id, run_id, data, occurred_at) VALUES ('evt_' || lpad(currval('turn_seq')::text, 22, '0'), :acc, 'turn.created', :que, :run, :data, :now);
WITH v AS ( INSERT INTO turn_lines (run_id, version) VALUES (:run, 1) ON CONFLICT (run_id) DO UPDATE SET version = turn_lines.version + 1 RETURNING version)
INSERT INTO turn_line_changes (run_id, version, removed, added, reset) SELECT :run, CASE WHEN nullif(:nul, 'x')::bigint IS NULL OR v.version = nullif(:nul, 'x')::bigint THEN v.version END, :removed, ARRAY[currval('turn_seq')]::bigint[], false FROM v RETURNING version;
END;
\endpipeline
