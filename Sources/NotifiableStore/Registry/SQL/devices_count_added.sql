-- devices_count_added: a device inserted adds one to its app's count of its class, and to the
-- app's devices new this hour.
--
-- Each app's devices are counted by what a send can do with them (device_count_class: reachable
-- through a provider, invalidated, or none), one row per class, kept as devices change instead of
-- counted on every read: the console's apps page and an "everyone" audience cost the same for an
-- app of ten devices or ten million (DeviceCountStore). Rows appended to device_count_changes in
-- the transaction of the change are folded by the queue's maintenance into device_counts, and
-- into the app's hour for devices new that hour (app_hourly_stats); a read adds the folded totals
-- and the changes not folded yet in one statement, so it is exact.
--
-- Row-level for inserts and moves (devices_count_moved), not once per statement: a registration
-- that changes no count (the SDK registering again, every launch) then runs nothing, since the
-- update's WHEN is false; one per statement ran on every upsert and halved the registry's upserts
-- per second (pgbench, 8 clients: 8,300 against 4,200). A device appended per row costs inserts
-- about 12 %.
--
-- By hand: SELECT * FROM device_count_changes ORDER BY id DESC LIMIT 10;

CREATE OR REPLACE FUNCTION devices_count_added() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    class text := device_count_class(NEW.provider, NEW.unregistered_at, NEW.invalidated_at, NEW.merged_into);
BEGIN
    INSERT INTO device_count_changes (app_id, class, devices, new_devices)
    VALUES (NEW.app_id, class, (class IS NOT NULL)::int, 1);
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER devices_count_insert AFTER INSERT ON devices FOR EACH ROW EXECUTE FUNCTION devices_count_added();
