-- Event data is kept as the exact bytes the core marshalled once when the
-- event was raised (core/platform.NewEvent): json keeps the text as given,
-- while jsonb reordered keys (shortest first) and added spaces, so the
-- stream and the display board read back other bytes than the webhook
-- bodies carried. Rows written before are rewritten with their keys in
-- byte order, the order the payloads are marshalled in (the bytes a reader
-- sees after encoding/json compacts them are then those of a new row).
ALTER TABLE events ADD COLUMN data_text json;
UPDATE events SET data_text = (
    SELECT coalesce(json_object_agg(key, value ORDER BY key COLLATE "C"), '{}'::json) FROM jsonb_each(data));
ALTER TABLE events DROP COLUMN data;
ALTER TABLE events RENAME COLUMN data_text TO data;
ALTER TABLE events ALTER COLUMN data SET NOT NULL;
