-- devices_count_removed: deletes come in bulk (retention, an app's deletion), so they are counted
-- once per statement, over its transition table: one row per app.
--
-- Each app's devices are counted by what a send can do with them (device_count_class: reachable
-- through a provider, invalidated, or none), one row per class, kept as devices change instead of
-- counted on every read: the console's apps page and an "everyone" audience cost the same for an
-- app of ten devices or ten million (DeviceCountStore). Rows appended to device_count_changes in
-- the transaction of the change are folded by the queue's maintenance into device_counts, and
-- into the app's hour for devices new that hour (app_hourly_stats); a read adds the folded totals
-- and the changes not folded yet in one statement, so it is exact.

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

CREATE OR REPLACE TRIGGER devices_count_delete AFTER DELETE ON devices
    REFERENCING OLD TABLE AS old_devices FOR EACH STATEMENT EXECUTE FUNCTION devices_count_removed();
