-- A phone's served turns in a queue (offers' loyalty points, issue 31):
-- only turns taken with a phone are indexed.
CREATE INDEX turns_phone_idx ON turns (queue_id, phone) WHERE phone IS NOT NULL;
