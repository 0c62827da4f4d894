-- Each app's devices, counted by what a send can do with them, kept as devices change instead of
-- counted on every read: the console's apps page and an "everyone" audience cost the same for an
-- app of ten devices or ten million.
--
-- As with the notifications' counters (0014): every statement that inserts, updates or deletes
-- devices appends, through the trigger below and in its own transaction, one row per app whose
-- counts it changed to app_device_count_changes; the queue's maintenance folds them into
-- app_device_counts, and into the app's hour for devices new that hour (app_hourly_stats, 0022).
-- A read adds the folded totals and the changes not folded yet in one statement, so it is exact.
-- A registration that changes no count (the SDK registering again, every launch) appends nothing.

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

ALTER TABLE app_hourly_stats ADD COLUMN new_devices bigint NOT NULL DEFAULT 0;

-- Which count a device is in: its provider when reachable, 'invalidated', or none (unregistered
-- or merged). The one place that says so.
CREATE FUNCTION device_count_class(provider text, unregistered_at timestamptz, invalidated_at timestamptz, merged_into bigint)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN unregistered_at IS NOT NULL OR merged_into IS NOT NULL THEN NULL
                WHEN invalidated_at IS NOT NULL THEN 'invalidated'
                ELSE provider END
$$;

-- Devices as counted: `weight` of them (negative: taken away) in the count named `class`
-- ('apns', 'fcm', 'invalidated', or 'new' for rows inserted).
CREATE TYPE counted_device AS (app_id bigint, class text, weight bigint);

-- What counted devices change, per app; apps whose counts come out unchanged are left out.
CREATE FUNCTION device_count_change(counted counted_device[]) RETURNS TABLE (
    app_id bigint, apns bigint, fcm bigint, invalidated bigint, new_devices bigint
) LANGUAGE sql IMMUTABLE AS $$
    SELECT * FROM (
        SELECT c.app_id,
               coalesce(sum(c.weight) FILTER (WHERE c.class = 'apns'), 0)::int8 AS apns,
               coalesce(sum(c.weight) FILTER (WHERE c.class = 'fcm'), 0)::int8 AS fcm,
               coalesce(sum(c.weight) FILTER (WHERE c.class = 'invalidated'), 0)::int8 AS invalidated,
               coalesce(sum(c.weight) FILTER (WHERE c.class = 'new'), 0)::int8 AS new_devices
        FROM unnest(counted) AS c
        GROUP BY c.app_id
    ) AS change
    WHERE (change.apns, change.fcm, change.invalidated, change.new_devices) <> (0, 0, 0, 0)
$$;

CREATE FUNCTION devices_count_changes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO app_device_count_changes (app_id, apns, fcm, invalidated, new_devices)
        SELECT * FROM device_count_change(ARRAY(
            SELECT (app_id, device_count_class(provider, unregistered_at, invalidated_at, merged_into), count(*))::counted_device
            FROM inserted_devices GROUP BY app_id, device_count_class(provider, unregistered_at, invalidated_at, merged_into)
            UNION ALL
            SELECT (app_id, 'new', count(*))::counted_device FROM inserted_devices GROUP BY app_id
        ));
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO app_device_count_changes (app_id, apns, fcm, invalidated, new_devices)
        SELECT * FROM device_count_change(ARRAY(
            SELECT (app_id, device_count_class(provider, unregistered_at, invalidated_at, merged_into), count(*))::counted_device
            FROM new_devices GROUP BY app_id, device_count_class(provider, unregistered_at, invalidated_at, merged_into)
            UNION ALL
            SELECT (app_id, device_count_class(provider, unregistered_at, invalidated_at, merged_into), -count(*))::counted_device
            FROM old_devices GROUP BY app_id, device_count_class(provider, unregistered_at, invalidated_at, merged_into)
        ));
    ELSE
        INSERT INTO app_device_count_changes (app_id, apns, fcm, invalidated, new_devices)
        SELECT * FROM device_count_change(ARRAY(
            SELECT (app_id, device_count_class(provider, unregistered_at, invalidated_at, merged_into), -count(*))::counted_device
            FROM old_devices GROUP BY app_id, device_count_class(provider, unregistered_at, invalidated_at, merged_into)
        ));
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER devices_count_insert AFTER INSERT ON devices
    REFERENCING NEW TABLE AS inserted_devices FOR EACH STATEMENT EXECUTE FUNCTION devices_count_changes();
CREATE TRIGGER devices_count_update AFTER UPDATE ON devices
    REFERENCING OLD TABLE AS old_devices NEW TABLE AS new_devices FOR EACH STATEMENT EXECUTE FUNCTION devices_count_changes();
CREATE TRIGGER devices_count_delete AFTER DELETE ON devices
    REFERENCING OLD TABLE AS old_devices FOR EACH STATEMENT EXECUTE FUNCTION devices_count_changes();

-- What the devices already hold, counted once.
INSERT INTO app_device_counts (app_id, apns, fcm, invalidated)
SELECT app_id, count(*) FILTER (WHERE class = 'apns'), count(*) FILTER (WHERE class = 'fcm'), count(*) FILTER (WHERE class = 'invalidated')
FROM (SELECT app_id, device_count_class(provider, unregistered_at, invalidated_at, merged_into) AS class FROM devices) AS d
GROUP BY app_id;

INSERT INTO app_hourly_stats AS h (app_id, hour, new_devices)
SELECT app_id, date_trunc('hour', created_at), count(*) FROM devices WHERE created_at > now() - interval '8 days'
GROUP BY 1, 2
ON CONFLICT (app_id, hour) DO UPDATE SET new_devices = EXCLUDED.new_devices;
