-- Indexes of the analytics aggregates (core/analytics): each figure is a
-- range scan of one of these per queue and period, never a scan of the
-- account's history. The INCLUDE columns make the scans index-only.

-- Turns taken in a period.
CREATE INDEX turns_queue_created_idx ON turns (queue_id, created_at);
-- Waits of the turns called in a period.
CREATE INDEX turns_queue_called_idx ON turns (queue_id, called_at) INCLUDE (created_at)
    WHERE called_at IS NOT NULL;
-- Turns finished in a period, by outcome, with their service time.
CREATE INDEX turns_queue_finished_idx ON turns (queue_id, finished_at) INCLUDE (status, service_seconds)
    WHERE finished_at IS NOT NULL;
-- The live dashboard: the active turns of a queue, however long its history.
CREATE INDEX turns_queue_active_idx ON turns (queue_id, status, created_at)
    WHERE status IN ('WAITLISTED', 'WAITING', 'HELD', 'CALLED', 'IN_SERVICE');

-- Appointments booked and completed in a period.
CREATE INDEX appointments_queue_created_idx ON appointments (queue_id, created_at);
CREATE INDEX appointments_queue_completed_idx ON appointments (queue_id, completed_at)
    WHERE completed_at IS NOT NULL;
