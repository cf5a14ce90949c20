-- A checked-in appointment of a HYBRID queue stands in the run's line as a
-- turn (docs/appointments.md, "HYBRID queues"): each names the other. No
-- foreign keys: the two rows are written in one transaction by the use
-- cases, and a key's KEY SHARE would add a lock to the order of
-- docs/turns.md for nothing.
ALTER TABLE turns ADD COLUMN appointment_id text;
ALTER TABLE appointments ADD COLUMN turn_id text;
