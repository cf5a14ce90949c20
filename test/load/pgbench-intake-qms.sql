-- qms's own intake (POST /queue-runs/{id}/turns, no idempotency key) replayed by pgbench: the statements qms sends
-- (captured with the pgx tracer of test/e2e, migration 0250), prepared (-M prepared) with the values as parameters,
-- so PostgreSQL's side of an intake can be measured without qms (docs/scaling.md, "Issue 30, fourth session" and
-- "fifth session: one row per intake"). qms sends two batches: BEGIN, the run's lock with the account's webhook
-- endpoints joined, the number's draw (which makes the run's next line version too, on the counter's row); then the
-- turn, the event, the line change under the drawn version (a plain insert), COMMIT. Here the draw goes on its own
-- between two pipelines, because pgbench takes a result's values (\gset: the number's seq for the ids, the line
-- version) only outside a pipeline: one Sync more than qms sends. (Reading the version back in the line change's
-- insert instead, as pgbench-intake-onerow.sql does, costs a look-up qms does not send, a sequential scan of
-- turn_counters on a migrated database's statistics: with currval for the ids too, 64,832 instructions per intake
-- more than this replay, of which the currval way and the Sync account for about 17,000, docs/scaling.md.)
-- pgbench-intake-qms-0240.sql is the intake before migration 0250, replayed the same way.
-- Run it on a copy of a database cpu_per_req.sh or ratios.sh seeded, after:
--   CREATE TABLE bench_runs AS SELECT (row_number() OVER (ORDER BY id))::int - 1 AS i, id AS run,
--     account_id AS acc, queue_id AS que FROM queue_runs;
-- with
--   pgbench -n -M prepared -c 16 -j 2 -T 10 -f test/load/pgbench-intake-qms.sql -D pad=3 \
--     -D "since=2026-01-01 00:00:00+00" -D "now=2026-01-01 00:05:00+00" -D hash=0123abcd -D 'removed={}' \
--     -D 'data={"number":1,"status":"WAITING"}' DBURL
-- (-c 1 -t N under valgrind --tool=callgrind counts its instructions: test/load/callgrind-intake.sh).
\set i random(0, 49)
SELECT run, acc, que FROM bench_runs WHERE i = :i \gset
\startpipeline
BEGIN;
SELECT r.id, r.account_id, r.queue_id, r.status, r.intake_open, r.opened_at, r.closed_at, r.created_at, r.updated_at, q.view_version, coalesce((SELECT st.samples FROM queue_service_times AS st WHERE st.queue_id = q.id), '{}'), e.id, e.account_id, e.url, e.events, e.created_at FROM queue_runs AS r JOIN queues AS q ON q.id = r.queue_id LEFT JOIN webhook_endpoints AS e ON e.account_id = r.account_id WHERE r.id = :run ORDER BY e.id FOR NO KEY UPDATE OF r;
\endpipeline
WITH c AS ( INSERT INTO turn_counters AS c (run_id, period, last_number, line_version) SELECT :run::text, ''::text, 1, 1 WHERE EXISTS (SELECT 1 FROM queue_runs WHERE id = :run AND account_id = :acc::text) ON CONFLICT (run_id) DO UPDATE SET last_number = CASE WHEN c.period = EXCLUDED.period OR c.period = '' OR EXCLUDED.period = '' THEN c.last_number + 1 ELSE 1 END, period = EXCLUDED.period, line_version = c.line_version + 1 RETURNING last_number, line_version), code AS MATERIALIZED (SELECT c.last_number AS n, c.line_version AS v, ''::text || CASE WHEN length(c.last_number::text) >= :pad::int THEN c.last_number::text ELSE lpad(c.last_number::text, :pad::int, '0') END AS code FROM c) SELECT code.n, EXISTS (SELECT 1 FROM turns WHERE run_id = :run AND display_code = code.code AND (status NOT IN ('COMPLETED', 'CANCELLED') OR finished_at > :since)) AS held, nextval('turn_seq') AS seq, code.v AS v FROM code \gset
\startpipeline
INSERT INTO turns (id, account_id, queue_id, run_id, number, display_code, status, priority, priority_rank, seq, people_count, phone, notify_whatsapp, form_response, station_id, call_count, reentries, held_from, reopen_to, service_seconds, idempotency_key, request_hash, arrived_at, called_at, started_at, finished_at, created_at, updated_at, appointment_id)
VALUES ('turn_' || lpad(:seq::text, 22, '0'), :acc, :que, :run, :seq, :seq::text, 'WAITING', 'NORMAL', 2, :seq, 1, NULL, false, '{}', NULL, 0, 0, '', '', NULL, NULL, :hash, NULL, NULL, NULL, NULL, :now, :now, NULL);
INSERT INTO events (id, account_id, name, queue_id, run_id, data, occurred_at) VALUES ('evt_' || lpad(:seq::text, 22, '0'), :acc, 'turn.created', :que, :run, :data, :now);
INSERT INTO turn_line_changes (run_id, version, removed, added, reset) VALUES (:run, :v, :removed, ARRAY[:seq]::bigint[], false);
END;
\endpipeline
