-- Reads from memory where the data is cold (issue 16, item 3).
--
-- A queue's definition (its row, its stations) changes rarely, but every
-- read of a turn and every change of a run needs it. queues.view_version
-- names one state of that definition: any change to the queue's row or to
-- one of its stations takes a new value from a sequence, so a process can
-- keep the decoded queue and stations per (queue, version) and read only
-- the version on the hot path. A sequence, not a counter, because its
-- values are never handed out twice: a version read inside a transaction
-- that later rolls back can never name other contents afterwards.
CREATE SEQUENCE queue_view_versions;

ALTER TABLE queues ADD COLUMN view_version bigint NOT NULL DEFAULT nextval('queue_view_versions');

CREATE FUNCTION qms_queue_view_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.view_version := nextval('queue_view_versions');
    RETURN NEW;
END;
$$;

-- Any update of the row (name, doc) is a new definition; row locks fire no
-- trigger, so the hot path's FOR NO KEY UPDATE costs nothing here.
CREATE TRIGGER queues_view_changed BEFORE UPDATE ON queues
    FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*) EXECUTE FUNCTION qms_queue_view_changed();

CREATE FUNCTION qms_station_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        UPDATE queues SET view_version = nextval('queue_view_versions') WHERE id = OLD.queue_id;
    END IF;
    IF TG_OP <> 'DELETE' AND (TG_OP = 'INSERT' OR NEW.queue_id IS DISTINCT FROM OLD.queue_id) THEN
        UPDATE queues SET view_version = nextval('queue_view_versions') WHERE id = NEW.queue_id;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER stations_view_changed AFTER INSERT OR UPDATE OR DELETE ON stations
    FOR EACH ROW EXECUTE FUNCTION qms_station_changed();

-- The queue's latest service times, newest first (at most 20, the
-- ServiceSamples of core/turns), kept as a running summary when a service
-- ends instead of sorted out of turns on every read. finished holds each
-- sample's finished_at, so a sample that is not the newest (clocks of two
-- processes) is still placed right.
CREATE TABLE queue_service_times (
    queue_id text PRIMARY KEY REFERENCES queues (id) ON DELETE CASCADE,
    samples  double precision[] NOT NULL,
    finished timestamptz[] NOT NULL
);

-- qms_service_recount rebuilds a queue's summary from its turns
-- (turns_service_idx): for the rare changes that take a sample away.
CREATE FUNCTION qms_service_recount(q text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO queue_service_times AS s (queue_id, samples, finished)
    SELECT q, coalesce(array_agg(x.service_seconds ORDER BY x.finished_at DESC), '{}'),
              coalesce(array_agg(x.finished_at ORDER BY x.finished_at DESC), '{}')
    FROM (SELECT service_seconds, finished_at FROM turns
          WHERE queue_id = q AND service_seconds IS NOT NULL
          ORDER BY finished_at DESC LIMIT 20) AS x
    WHERE EXISTS (SELECT 1 FROM queues WHERE id = q)
    ON CONFLICT (queue_id) DO UPDATE SET samples = EXCLUDED.samples, finished = EXCLUDED.finished;
END;
$$;

CREATE FUNCTION qms_service_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    gained boolean := TG_OP <> 'DELETE' AND NEW.service_seconds IS NOT NULL
        AND (TG_OP = 'INSERT' OR (OLD.service_seconds IS NULL AND OLD.queue_id = NEW.queue_id));
BEGIN
    IF gained THEN
        -- A service just ended: the new sample goes first when it is the
        -- newest, which it is unless two clocks disagree.
        INSERT INTO queue_service_times AS s (queue_id, samples, finished)
        VALUES (NEW.queue_id, ARRAY[NEW.service_seconds], ARRAY[NEW.finished_at])
        ON CONFLICT (queue_id) DO UPDATE SET
            samples  = CASE WHEN cardinality(s.finished) = 0 OR NEW.finished_at >= s.finished[1]
                            THEN (NEW.service_seconds || s.samples)[1:20] ELSE s.samples END,
            finished = CASE WHEN cardinality(s.finished) = 0 OR NEW.finished_at >= s.finished[1]
                            THEN (NEW.finished_at || s.finished)[1:20] ELSE s.finished END;
        IF FOUND AND EXISTS (SELECT 1 FROM queue_service_times
                             WHERE queue_id = NEW.queue_id AND finished[1] > NEW.finished_at) THEN
            PERFORM qms_service_recount(NEW.queue_id);
        END IF;
        RETURN NULL;
    END IF;
    IF TG_OP <> 'INSERT' THEN
        PERFORM qms_service_recount(OLD.queue_id);
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.queue_id IS DISTINCT FROM OLD.queue_id THEN
        PERFORM qms_service_recount(NEW.queue_id);
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER turns_service_inserted AFTER INSERT ON turns
    FOR EACH ROW WHEN (NEW.service_seconds IS NOT NULL) EXECUTE FUNCTION qms_service_changed();
CREATE TRIGGER turns_service_updated AFTER UPDATE ON turns
    FOR EACH ROW WHEN (OLD.service_seconds IS DISTINCT FROM NEW.service_seconds
        OR (OLD.service_seconds IS NOT NULL AND (OLD.finished_at IS DISTINCT FROM NEW.finished_at
                                                 OR OLD.queue_id IS DISTINCT FROM NEW.queue_id)))
    EXECUTE FUNCTION qms_service_changed();
CREATE TRIGGER turns_service_deleted AFTER DELETE ON turns
    FOR EACH ROW WHEN (OLD.service_seconds IS NOT NULL) EXECUTE FUNCTION qms_service_changed();

-- Existing queues start from their turns.
INSERT INTO queue_service_times (queue_id, samples, finished)
SELECT q.id, coalesce(x.samples, '{}'), coalesce(x.finished, '{}')
FROM queues AS q
LEFT JOIN LATERAL (
    SELECT array_agg(t.service_seconds ORDER BY t.finished_at DESC) AS samples,
           array_agg(t.finished_at ORDER BY t.finished_at DESC) AS finished
    FROM (SELECT service_seconds, finished_at FROM turns
          WHERE queue_id = q.id AND service_seconds IS NOT NULL
          ORDER BY finished_at DESC LIMIT 20) AS t
) AS x ON true;
