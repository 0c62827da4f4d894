-- deliveries_truncated: TRUNCATE fires no row or delete trigger, so emptying deliveries empties the
-- notification counters (notification_counters, notification_counter_changes) with it; see
-- deliveries_count_changes.

CREATE OR REPLACE FUNCTION deliveries_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM notification_counter_changes;
    DELETE FROM notification_counters;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER deliveries_counted_truncate AFTER TRUNCATE ON deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION deliveries_truncated();
