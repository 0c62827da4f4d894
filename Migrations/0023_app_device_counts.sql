-- Each app's devices, counted by what a send can do with them, kept as devices change instead of
-- counted on every read: the console's apps page and an "everyone" audience cost the same for an
-- app of ten devices or ten million.
--
-- As with the notifications' counters (deliveries_count_changes): every device inserted, every
-- device that moves from one count to another, and every statement that deletes devices appends,
-- through the triggers of devices_count_added, devices_count_moved and devices_count_removed and
-- in its own transaction, a row to app_device_count_changes; the queue's maintenance folds them
-- into app_device_counts, and into the app's hour for devices new that hour (app_hourly_stats,
-- 0022).
-- A read adds the folded totals and the changes not folded yet in one statement, so it is exact.

-- Writes to devices wait while this runs (the backfill, about one scan of devices).
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

-- The triggers that keep the counts: devices_count_added, devices_count_moved and
-- devices_count_removed (Sources/NotifiableStore/Registry/SQL/).

-- What the devices already hold, counted once.
INSERT INTO app_device_counts (app_id, apns, fcm, invalidated)
SELECT app_id, count(*) FILTER (WHERE class = 'apns'), count(*) FILTER (WHERE class = 'fcm'), count(*) FILTER (WHERE class = 'invalidated')
FROM (SELECT app_id, device_count_class(provider, unregistered_at, invalidated_at, merged_into) AS class FROM devices) AS d
GROUP BY app_id;

INSERT INTO app_hourly_stats AS h (app_id, hour, new_devices)
SELECT app_id, date_trunc('hour', created_at), count(*) FROM devices WHERE created_at > now() - interval '8 days'
GROUP BY 1, 2
ON CONFLICT (app_id, hour) DO UPDATE SET new_devices = EXCLUDED.new_devices;
