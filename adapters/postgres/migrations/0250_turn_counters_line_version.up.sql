-- The run's line version on the row of its number counter (issue 30): an
-- intake's draw bumps both in one upsert and returns both, so the line's own
-- upsert (turn_lines) goes from every intake, and with it the statement that
-- read the version beside the account's webhook endpoints (the run's lock
-- reads those). docs/decisions.md, "The run's number and line version on one
-- row"; docs/scaling.md, "Issue 30, fifth session: one row per intake".
--
-- turn_counters is rebuilt, not altered: after ADD COLUMN ... DEFAULT and an
-- update of every row the table cost PostgreSQL about 34,000 instructions
-- more per intake than the same table made whole, a third of the gain
-- (test/load/callgrind-intake.sh). A run that has a line version but no
-- counter gets period '' and last_number 0, which the draw reads as no
-- counter (its next number is 1, in whatever period); one with a counter
-- and no line version gets version 0, which is what reading no row of
-- turn_lines gave.
CREATE TABLE turn_counters_new (
    run_id       text    NOT NULL,
    period       text    NOT NULL,
    last_number  integer NOT NULL,
    line_version bigint  NOT NULL
);
INSERT INTO turn_counters_new (run_id, period, last_number, line_version)
SELECT coalesce(c.run_id, l.run_id), coalesce(c.period, ''), coalesce(c.last_number, 0), coalesce(l.version, 0)
FROM turn_counters AS c FULL JOIN turn_lines AS l ON l.run_id = c.run_id;
DROP TABLE turn_counters;
DROP TABLE turn_lines;
ALTER TABLE turn_counters_new RENAME TO turn_counters;
-- The constraints of migration 0052's table, under their names.
ALTER TABLE turn_counters ADD CONSTRAINT turn_counters_pkey PRIMARY KEY (run_id);
ALTER TABLE turn_counters ADD CONSTRAINT turn_counters_run_id_fkey
    FOREIGN KEY (run_id) REFERENCES queue_runs (id) ON DELETE CASCADE;
