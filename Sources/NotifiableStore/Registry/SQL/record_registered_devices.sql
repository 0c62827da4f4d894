-- record_registered_devices: starts each device's history (device_events) with 'registered' and
-- the user alias it was registered with. The history is what operators read of a device
-- (DashboardStore) and what a person's export and erasure find (PersonExportStore,
-- PersonErasureStore); kept by a trigger, so every path that adds devices (API, imports, workers)
-- is seen. Statement-level, reading the rows a statement inserted as a whole, so a bulk import
-- writes one INSERT … SELECT of events per batch rather than one per device. Aliases are kept in
-- columns of their own, so a reader can show the one the device has now and say "a previous user"
-- for the others.
--
-- By hand: SELECT * FROM device_events WHERE device_id = 1 ORDER BY id;

CREATE OR REPLACE FUNCTION record_registered_devices() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO device_events (device_id, event, user_alias)
    SELECT id, 'registered', user_alias FROM inserted_devices ORDER BY id;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER devices_history_insert AFTER INSERT ON devices
    REFERENCING NEW TABLE AS inserted_devices
    FOR EACH STATEMENT EXECUTE FUNCTION record_registered_devices();
