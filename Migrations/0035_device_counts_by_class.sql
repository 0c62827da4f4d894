-- Each app's devices counted as one row per class (a provider the devices are reachable through,
-- or 'invalidated'), instead of a column per provider: a provider added later is counted without
-- touching these tables (devices_count_added, devices_count_moved, devices_count_removed;
-- DeviceCountStore).
--
-- The trigger functions are replaced here too, as Registry/SQL/ has them at this release (the
-- migrator applies those files after the migrations, in a transaction of their own): in between,
-- the functions before would append to app_device_count_changes, which nothing folds into the new
-- counts any more. The tables before, app_device_counts and app_device_count_changes, stay for the
-- previous release's processes to read while they run; a later release drops them.
--
-- By hand: SELECT app_id, class, devices FROM device_counts ORDER BY 1, 2;

-- Writes to devices wait while this runs (one scan of devices).
LOCK TABLE devices IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE device_counts (
    app_id   bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    -- device_count_class: a provider's name (registered, not invalidated, not merged) or 'invalidated'.
    class    text NOT NULL,
    devices  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, class)
);

-- No foreign key, as before: an app's deletion cascades to its devices, whose trigger then appends
-- changes for an app already gone; the fold discards them.
CREATE TABLE device_count_changes (
    id           bigserial PRIMARY KEY,
    app_id       bigint NOT NULL,
    -- Null for a device inserted in no count (one that only counts as new).
    class        text,
    devices      bigint NOT NULL,
    -- Rows inserted: devices new to the app.
    new_devices  bigint NOT NULL,
    at           timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE device_count_changes SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 10000);

-- The devices as they are, counted once (the old totals and unfolded changes are their sum).
INSERT INTO device_counts (app_id, class, devices)
SELECT app_id, class, count(*)
FROM (SELECT app_id, device_count_class(provider, unregistered_at, invalidated_at, merged_into) AS class FROM devices) AS d
WHERE class IS NOT NULL
GROUP BY app_id, class;

-- Devices new in hours not folded yet go to their hours now; the changes are counted above.
WITH folded AS (DELETE FROM app_device_count_changes RETURNING app_id, new_devices, at)
INSERT INTO app_hourly_stats AS h (app_id, hour, new_devices)
SELECT f.app_id, date_trunc('hour', f.at), sum(f.new_devices)
FROM folded f JOIN apps ON apps.id = f.app_id
WHERE f.new_devices <> 0
GROUP BY 1, 2
ON CONFLICT (app_id, hour) DO UPDATE SET new_devices = h.new_devices + EXCLUDED.new_devices;

-- The trigger functions as Registry/SQL/ defines them at this release (see above).
CREATE OR REPLACE FUNCTION devices_count_added() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    class text := device_count_class(NEW.provider, NEW.unregistered_at, NEW.invalidated_at, NEW.merged_into);
BEGIN
    INSERT INTO device_count_changes (app_id, class, devices, new_devices)
    VALUES (NEW.app_id, class, (class IS NOT NULL)::int, 1);
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION devices_count_moved() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    before text := device_count_class(OLD.provider, OLD.unregistered_at, OLD.invalidated_at, OLD.merged_into);
    after text := device_count_class(NEW.provider, NEW.unregistered_at, NEW.invalidated_at, NEW.merged_into);
BEGIN
    INSERT INTO device_count_changes (app_id, class, devices, new_devices)
    SELECT NEW.app_id, moved.class, moved.devices, 0
    FROM (VALUES (before, -1), (after, 1)) AS moved(class, devices)
    WHERE moved.class IS NOT NULL;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION devices_count_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO device_count_changes (app_id, class, devices, new_devices)
    SELECT app_id, class, -count(*), 0
    FROM (SELECT app_id, device_count_class(provider, unregistered_at, invalidated_at, merged_into) AS class FROM old_devices) AS d
    WHERE class IS NOT NULL
    GROUP BY app_id, class;
    RETURN NULL;
END
$$;
