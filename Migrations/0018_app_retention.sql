-- An app may keep its deliveries, notifications, sandbox pushes and gone devices for fewer days
-- than the service's NOTIFIABLE_RETENTION_DAYS; null keeps the service's period. Never for more:
-- the service drops whole days of deliveries, every app's at once, so its period is the longest
-- any app gets (RetentionStore takes the smaller of the two).
ALTER TABLE apps ADD COLUMN retention_days integer CHECK (retention_days BETWEEN 1 AND 3650);

-- An app keeping fewer days has its old deliveries removed row by row, and a notification kept
-- past them (a user's stateful copy still live) keeps its counters, as it does when whole days are
-- dropped: retention removes rows, not the history they add up to. Retention says so with
-- `SET LOCAL notifiable.retention = 'on'` in the transaction of its deletes; every other delete
-- (an app's or a device's cascade) is counted as before.
CREATE OR REPLACE FUNCTION deliveries_count_changes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO notification_counter_changes
            (notification_id, pending, retrying, sent, failed, dead, cancelled, delivered, opened)
        SELECT * FROM delivery_count_change(ARRAY(
            SELECT (notification_id, state, delivered_at IS NOT NULL, opened_at IS NOT NULL, count(*))::counted_delivery
            FROM inserted WHERE kind = 'push'
            GROUP BY notification_id, state, delivered_at IS NOT NULL, opened_at IS NOT NULL
        ));
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO notification_counter_changes
            (notification_id, pending, retrying, sent, failed, dead, cancelled, delivered, opened)
        SELECT * FROM delivery_count_change(ARRAY(
            SELECT (notification_id, state, delivered_at IS NOT NULL, opened_at IS NOT NULL, count(*))::counted_delivery
            FROM updated WHERE kind = 'push'
            GROUP BY notification_id, state, delivered_at IS NOT NULL, opened_at IS NOT NULL
            UNION ALL
            SELECT (notification_id, state, delivered_at IS NOT NULL, opened_at IS NOT NULL, -count(*))::counted_delivery
            FROM previous WHERE kind = 'push'
            GROUP BY notification_id, state, delivered_at IS NOT NULL, opened_at IS NOT NULL
        ));
    ELSIF current_setting('notifiable.retention', true) IS DISTINCT FROM 'on' THEN
        INSERT INTO notification_counter_changes
            (notification_id, pending, retrying, sent, failed, dead, cancelled, delivered, opened)
        SELECT * FROM delivery_count_change(ARRAY(
            SELECT (notification_id, state, delivered_at IS NOT NULL, opened_at IS NOT NULL, -count(*))::counted_delivery
            FROM removed WHERE kind = 'push'
            GROUP BY notification_id, state, delivered_at IS NOT NULL, opened_at IS NOT NULL
        ));
    END IF;
    RETURN NULL;
END
$$;
