-- A checked-in appointment of a HYBRID queue that is not in the line yet
-- says when it joins (docs/appointments.md, "Waiting to join"): its slot's
-- start when checked in early; still set past that time while the run is
-- closed, until the run opens again and it joins. Null once in the line,
-- and in every other case. Issue 23: such an appointment was lost when the
-- run was closed at its slot's start.
ALTER TABLE appointments ADD COLUMN joins_line_at timestamptz;
-- The appointments of a run waiting to join, in the order they join.
CREATE INDEX appointments_joining_idx ON appointments (run_id, joins_line_at, id) WHERE joins_line_at IS NOT NULL;
-- Appointments checked in early before this column existed.
UPDATE appointments a SET joins_line_at = a.slot_start
    FROM queues q
    WHERE q.id = a.queue_id AND q.type = 'HYBRID' AND a.status = 'CHECKED_IN' AND a.turn_id IS NULL;
