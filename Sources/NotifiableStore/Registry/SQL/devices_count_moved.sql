-- devices_count_moved: a device that moved from one count to another (unregistered, invalidated,
-- merged, registered again; an app's devices never move between apps) takes one from its old
-- count and adds one to its new. Row-level, behind a WHEN that compares the two rows' classes, so
-- an update that moves no count runs nothing (see devices_count_added).
--
-- Each app's devices are counted by what a send can do with them (device_count_class: reachable
-- through a provider, invalidated, or none), one row per class, kept as devices change instead of
-- counted on every read: the console's apps page and an "everyone" audience cost the same for an
-- app of ten devices or ten million (DeviceCountStore). Rows appended to device_count_changes in
-- the transaction of the change are folded by the queue's maintenance into device_counts, and
-- into the app's hour for devices new that hour (app_hourly_stats); a read adds the folded totals
-- and the changes not folded yet in one statement, so it is exact.

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

CREATE OR REPLACE TRIGGER devices_count_update AFTER UPDATE ON devices FOR EACH ROW
    WHEN (device_count_class(OLD.provider, OLD.unregistered_at, OLD.invalidated_at, OLD.merged_into)
          IS DISTINCT FROM device_count_class(NEW.provider, NEW.unregistered_at, NEW.invalidated_at, NEW.merged_into))
    EXECUTE FUNCTION devices_count_moved();
