-- The schema pgbench-intake-onerow.sql replays on (not a migration): turn_counters rebuilt with the run's line
-- version beside its number, moved from turn_lines. Rebuilt, not altered: turn_counters after `ADD COLUMN
-- line_version bigint NOT NULL DEFAULT 0` and an update of every row cost about 34,000 instructions more per
-- intake under callgrind-intake.sh (1,303,917 against 1,269,518; docs/scaling.md, "one row per intake").
CREATE TABLE turn_counters_new (
    run_id       text PRIMARY KEY REFERENCES queue_runs (id) ON DELETE CASCADE,
    period       text NOT NULL,
    last_number  integer NOT NULL,
    line_version bigint NOT NULL
);
INSERT INTO turn_counters_new (run_id, period, last_number, line_version)
SELECT coalesce(c.run_id, l.run_id), coalesce(c.period, ''), coalesce(c.last_number, 0), coalesce(l.version, 0)
FROM turn_counters AS c FULL JOIN turn_lines AS l ON l.run_id = c.run_id;
DROP TABLE turn_counters;
DROP TABLE turn_lines;
ALTER TABLE turn_counters_new RENAME TO turn_counters;
