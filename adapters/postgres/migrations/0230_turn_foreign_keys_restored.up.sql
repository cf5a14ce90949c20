-- Migration 0163 dropped the foreign keys of help_requests and turn_marks
-- to turns, because the key's FOR KEY SHARE on a waiting turn's row made
-- dispatch/next (then FOR UPDATE SKIP LOCKED) pass that turn by. Turn rows
-- are now locked FOR NO KEY UPDATE (adapters/postgres/turns.go,
-- lockTurnRow), which KEY SHARE does not conflict with, so the keys hide
-- no turn any more; without them a deleted queue's turns (the cascade of
-- turns.queue_id) left their help requests and marks behind. The keys come
-- back, after the rows left behind meanwhile are removed.
DELETE FROM help_requests h WHERE NOT EXISTS (SELECT 1 FROM turns t WHERE t.id = h.turn_id);
DELETE FROM turn_marks m WHERE NOT EXISTS (SELECT 1 FROM turns t WHERE t.id = m.turn_id);
ALTER TABLE help_requests ADD CONSTRAINT help_requests_turn_id_fkey
    FOREIGN KEY (turn_id) REFERENCES turns (id) ON DELETE CASCADE;
ALTER TABLE turn_marks ADD CONSTRAINT turn_marks_turn_id_fkey
    FOREIGN KEY (turn_id) REFERENCES turns (id) ON DELETE CASCADE;
