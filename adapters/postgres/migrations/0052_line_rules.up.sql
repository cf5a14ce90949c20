-- One number counter per run, tagged with the numbering period it counts in
-- (docs/turns.md, "Numbers"). It replaces turn_numbers' row per run and
-- day, whose rows let a switch of resetNumberingDaily restart at 1 or
-- resume an old count while turns still held those numbers. A new period
-- now starts after the highest number an unfinished turn holds.
CREATE TABLE turn_counters (
    run_id       text PRIMARY KEY REFERENCES queue_runs (id) ON DELETE CASCADE,
    period       text NOT NULL,
    last_number  integer NOT NULL
);
INSERT INTO turn_counters (run_id, period, last_number)
SELECT DISTINCT ON (run_id) run_id, day, last_number
FROM turn_numbers ORDER BY run_id, day DESC;
DROP TABLE turn_numbers;

-- The display codes of a run's turns: intake skips a code in use (a
-- number kept by a forward, yesterday's after a daily restart), so a code
-- never repeats among the run's unfinished turns.
CREATE INDEX turns_code_idx ON turns (run_id, display_code);

-- Line keys now carry negative arrival numbers too (a called turn that was
-- held and released goes to the head of its priority), so their encoding
-- in turn_line_changes changed: drop the recorded changes, and readers
-- reload the line once.
DELETE FROM turn_line_changes;

-- Whether a forward's destination turn kept the source's number (a
-- keepNumber link whose code no unfinished destination turn showed).
ALTER TABLE queue_forwards ADD COLUMN number_kept boolean NOT NULL DEFAULT false;
UPDATE queue_forwards f SET number_kept = true
FROM queue_links l, turns s, turns d
WHERE l.id = f.link_id AND l.keep_number AND s.id = f.from_turn_id AND d.id = f.to_turn_id
  AND d.display_code = s.display_code;
