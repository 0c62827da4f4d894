-- Each app's devices, counted by what a send can do with them, kept as devices change instead of
-- counted on every read: the console's apps page and an "everyone" audience cost the same for an
-- app of ten devices or ten million.
--
-- As with the notifications' counters (0014): every device inserted, every device that moves
-- from one count to another, and every statement that deletes devices appends, through the
-- triggers below and in its own transaction, a row to app_device_count_changes; the queue's maintenance folds them into
-- app_device_counts, and into the app's hour for devices new that hour (app_hourly_stats, 0022).
-- A read adds the folded totals and the changes not folded yet in one statement, so it is exact.

-- Writes to devices wait while this runs (the trigger's creation and the backfill, about one scan
-- of devices).
LOCK TABLE devices IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE app_device_counts (
    app_id      bigint PRIMARY KEY REFERENCES apps (id) ON DELETE CASCADE,
    -- Reachable: registered, not invalidated, not merged into another row.
    apns        bigint NOT NULL DEFAULT 0,
    fcm         bigint NOT NULL DEFAULT 0,
    -- Registered, not merged, but invalidated by a gateway (a dead token).
    invalidated bigint NOT NULL DEFAULT 0
);

-- No foreign key: an app's deletion cascades to its devices, whose trigger then appends changes
-- for an app already gone; the fold discards them.
CREATE TABLE app_device_count_changes (
    id          bigserial PRIMARY KEY,
    app_id      bigint NOT NULL,
    apns        bigint NOT NULL,
    fcm         bigint NOT NULL,
    invalidated bigint NOT NULL,
    -- Rows inserted: devices new to the app.
    new_devices bigint NOT NULL,
    at          timestamptz NOT NULL DEFAULT now()
);

-- Filled and emptied all the time (an import of a million devices appends a million rows, folded
-- away within seconds), and read whole by the apps list: vacuumed by how many rows went, not by
-- how large the table is, so the dead rows are not read for long.
ALTER TABLE app_device_count_changes SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 10000);

ALTER TABLE app_hourly_stats ADD COLUMN new_devices bigint NOT NULL DEFAULT 0;

-- Which count a device is in: its provider when reachable, 'invalidated', or none (unregistered
-- or merged). The one place that says so.
CREATE FUNCTION device_count_class(provider text, unregistered_at timestamptz, invalidated_at timestamptz, merged_into bigint)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN unregistered_at IS NOT NULL OR merged_into IS NOT NULL THEN NULL
                WHEN invalidated_at IS NOT NULL THEN 'invalidated'
                ELSE provider END
$$;

-- A row-level trigger for inserts and moves, not one per statement: a registration that changes
-- no count (the SDK registering again, every launch) then runs nothing, since the update's WHEN
-- is false; one per statement ran on every upsert and halved the registry's upserts per second
-- (pgbench, 8 clients: 8,300 against 4,200). A device appended per row costs inserts about 12 %.
CREATE FUNCTION devices_count_added() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    class text := coalesce(device_count_class(NEW.provider, NEW.unregistered_at, NEW.invalidated_at, NEW.merged_into), '');
BEGIN
    INSERT INTO app_device_count_changes (app_id, apns, fcm, invalidated, new_devices)
    VALUES (NEW.app_id, (class = 'apns')::int, (class = 'fcm')::int, (class = 'invalidated')::int, 1);
    RETURN NULL;
END
$$;

-- A device that moved from one count to another (an app's devices never move between apps).
CREATE FUNCTION devices_count_moved() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    before text := coalesce(device_count_class(OLD.provider, OLD.unregistered_at, OLD.invalidated_at, OLD.merged_into), '');
    after text := coalesce(device_count_class(NEW.provider, NEW.unregistered_at, NEW.invalidated_at, NEW.merged_into), '');
BEGIN
    INSERT INTO app_device_count_changes (app_id, apns, fcm, invalidated, new_devices)
    VALUES (NEW.app_id, (after = 'apns')::int - (before = 'apns')::int, (after = 'fcm')::int - (before = 'fcm')::int,
            (after = 'invalidated')::int - (before = 'invalidated')::int, 0);
    RETURN NULL;
END
$$;

-- Deletes come in bulk (retention, an app's deletion): one row per app and statement.
CREATE FUNCTION devices_count_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO app_device_count_changes (app_id, apns, fcm, invalidated, new_devices)
    SELECT app_id, -count(*) FILTER (WHERE class = 'apns'), -count(*) FILTER (WHERE class = 'fcm'),
           -count(*) FILTER (WHERE class = 'invalidated'), 0
    FROM (SELECT app_id, device_count_class(provider, unregistered_at, invalidated_at, merged_into) AS class FROM old_devices) AS d
    GROUP BY app_id
    HAVING count(class) > 0;
    RETURN NULL;
END
$$;

CREATE TRIGGER devices_count_insert AFTER INSERT ON devices FOR EACH ROW EXECUTE FUNCTION devices_count_added();
CREATE TRIGGER devices_count_update AFTER UPDATE ON devices FOR EACH ROW
    WHEN (device_count_class(OLD.provider, OLD.unregistered_at, OLD.invalidated_at, OLD.merged_into)
          IS DISTINCT FROM device_count_class(NEW.provider, NEW.unregistered_at, NEW.invalidated_at, NEW.merged_into))
    EXECUTE FUNCTION devices_count_moved();
CREATE TRIGGER devices_count_delete AFTER DELETE ON devices
    REFERENCING OLD TABLE AS old_devices FOR EACH STATEMENT EXECUTE FUNCTION devices_count_removed();

-- What the devices already hold, counted once.
INSERT INTO app_device_counts (app_id, apns, fcm, invalidated)
SELECT app_id, count(*) FILTER (WHERE class = 'apns'), count(*) FILTER (WHERE class = 'fcm'), count(*) FILTER (WHERE class = 'invalidated')
FROM (SELECT app_id, device_count_class(provider, unregistered_at, invalidated_at, merged_into) AS class FROM devices) AS d
GROUP BY app_id;

INSERT INTO app_hourly_stats AS h (app_id, hour, new_devices)
SELECT app_id, date_trunc('hour', created_at), count(*) FROM devices WHERE created_at > now() - interval '8 days'
GROUP BY 1, 2
ON CONFLICT (app_id, hour) DO UPDATE SET new_devices = EXCLUDED.new_devices;
