-- A turn's run and queue in one foreign key (issue 30): (run_id, queue_id)
-- references the run with that queue, instead of run_id and queue_id each
-- referencing its own table.
--
-- Every insert of a turn checked both keys: two queries of the RI trigger,
-- and FOR KEY SHARE on the queue's row, a locker's WAL record on a row that
-- every intake of the queue's runs shares (and a MultiXact when two of them
-- hold it at once). The run's row is already locked by the intake (FOR NO
-- KEY UPDATE, the run's lock), so the one check left locks nothing new.
-- It also says more: a turn's queue is its run's queue, which the two keys
-- did not hold. A deleted queue still takes its turns, through its runs
-- (queue_runs.queue_id cascades), and a deleted run takes its turns.
-- docs/decisions.md, "A turn's run and queue in one foreign key".
--
-- The key's target is a unique (queue_id, id), which takes the place of
-- queue_runs_queue_idx (queue_id, id DESC; a queue's runs newest first
-- read it backwards just as well): no index more to write, and look-ups
-- of a run by id keep queue_runs_pkey.
ALTER TABLE queue_runs ADD CONSTRAINT queue_runs_queue_id_key UNIQUE (queue_id, id);
DROP INDEX queue_runs_queue_idx;
ALTER TABLE turns ADD CONSTRAINT turns_run_queue_fkey
    FOREIGN KEY (run_id, queue_id) REFERENCES queue_runs (id, queue_id) ON DELETE CASCADE;
ALTER TABLE turns DROP CONSTRAINT turns_queue_id_fkey;
ALTER TABLE turns DROP CONSTRAINT turns_run_id_fkey;
