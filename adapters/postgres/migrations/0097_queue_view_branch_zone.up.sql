-- A queue's view version also names its branch's time zone (issue 16): a
-- change of the entity's location.timezone gives each of its queues a new
-- version, so the hot statements need not read the entity at all.
CREATE FUNCTION qms_entity_zone_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE queues SET view_version = nextval('queue_view_versions') WHERE entity_id = NEW.id;
    RETURN NULL;
END;
$$;

CREATE TRIGGER entities_zone_changed AFTER UPDATE ON entities
    FOR EACH ROW WHEN (OLD.doc->'location'->>'timezone' IS DISTINCT FROM NEW.doc->'location'->>'timezone')
    EXECUTE FUNCTION qms_entity_zone_changed();
