-- help_requests and turn_marks are written while their turn is WAITING
-- (a customer asks for help; a wait breaches its SLA). A foreign key to
-- turns would take FOR KEY SHARE on that turn's row for the rest of the
-- writing transaction, and dispatch/next, which takes the first waiting
-- turn with FOR UPDATE SKIP LOCKED, would skip it and call the next one out
-- of line order (the mixed-workload checker caught the same with the
-- notifications' key, issue 27). The use cases check the turn themselves;
-- turns are never deleted, so the cascade had nothing to do.
ALTER TABLE help_requests DROP CONSTRAINT IF EXISTS help_requests_turn_id_fkey;
ALTER TABLE turn_marks DROP CONSTRAINT IF EXISTS turn_marks_turn_id_fkey;
