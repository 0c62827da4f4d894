-- Trends: per app and hour, pushes sent, failed, given up, delivered and opened, and failures by
-- reason; per notification and minute, pushes sent. Read by the console for the last 7 days, so
-- they must cost the same at a thousand deliveries a day or ten million: they are rolled up as
-- the counters are, never counted from deliveries on a read.
--
-- The counters' changes now carry when they were made, and the fold that adds them to a
-- notification's counters (NotificationCounterStore.fold) adds them to their app's hour and
-- their notification's minute too. Changes appended before this migration keep a NULL time: the
-- backfill below has counted what they record, from the deliveries themselves.
ALTER TABLE notification_counter_changes ADD COLUMN at timestamptz;
ALTER TABLE notification_counter_changes ALTER COLUMN at SET DEFAULT now();

CREATE TABLE app_hourly_stats (
    app_id    bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    hour      timestamptz NOT NULL,
    sent      bigint NOT NULL DEFAULT 0,
    failed    bigint NOT NULL DEFAULT 0,
    dead      bigint NOT NULL DEFAULT 0,
    delivered bigint NOT NULL DEFAULT 0,
    opened    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, hour)
);

CREATE TABLE app_hourly_failures (
    app_id     bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    hour       timestamptz NOT NULL,
    reason     text NOT NULL,
    deliveries bigint NOT NULL,
    PRIMARY KEY (app_id, hour, reason)
);

CREATE TABLE notification_minute_sends (
    notification_id bigint NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
    minute          timestamptz NOT NULL,
    sent            bigint NOT NULL,
    PRIMARY KEY (notification_id, minute)
);

-- Appended by the deliveries trigger, folded into app_hourly_failures (TrendStore.foldFailures),
-- as counter changes are: appending never waits on a shared row. No foreign key: an app's
-- deletion cascades to its deliveries, whose trigger may append for an app already gone.
CREATE TABLE delivery_failure_changes (
    id         bigserial PRIMARY KEY,
    app_id     bigint NOT NULL,
    reason     text NOT NULL,
    deliveries bigint NOT NULL,
    at         timestamptz NOT NULL DEFAULT now()
);

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
        -- Pushes that failed for good or gave up in this statement, by app and reason. Most
        -- statements (claims, sends, status events) fail none, and the check stops there.
        IF EXISTS (SELECT 1 FROM updated WHERE state IN ('failed', 'dead') AND kind = 'push') THEN
            INSERT INTO delivery_failure_changes (app_id, reason, deliveries)
            SELECT u.app_id, coalesce(u.reason, 'unknown'), count(*)
            FROM updated u JOIN previous p ON p.id = u.id
            WHERE u.kind = 'push' AND u.state IN ('failed', 'dead') AND p.state NOT IN ('failed', 'dead')
            GROUP BY u.app_id, coalesce(u.reason, 'unknown');
        END IF;
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

-- What the last 8 days already hold, rebuilt from the deliveries once.
INSERT INTO app_hourly_stats (app_id, hour, sent, failed, dead, delivered, opened)
SELECT app_id, hour, sum(sent), sum(failed), sum(dead), sum(delivered), sum(opened) FROM (
    SELECT app_id, date_trunc('hour', sent_at) AS hour, 1 AS sent, 0 AS failed, 0 AS dead, 0 AS delivered, 0 AS opened
    FROM deliveries WHERE kind = 'push' AND state = 'sent' AND sent_at > now() - interval '8 days'
    UNION ALL
    SELECT app_id, date_trunc('hour', failed_at), 0, 1, 0, 0, 0
    FROM deliveries WHERE kind = 'push' AND state = 'failed' AND failed_at > now() - interval '8 days'
    UNION ALL
    SELECT app_id, date_trunc('hour', dead_at), 0, 0, 1, 0, 0
    FROM deliveries WHERE kind = 'push' AND state = 'dead' AND dead_at > now() - interval '8 days'
    UNION ALL
    SELECT app_id, date_trunc('hour', delivered_at), 0, 0, 0, 1, 0
    FROM deliveries WHERE kind = 'push' AND delivered_at > now() - interval '8 days'
    UNION ALL
    SELECT app_id, date_trunc('hour', opened_at), 0, 0, 0, 0, 1
    FROM deliveries WHERE kind = 'push' AND opened_at > now() - interval '8 days'
) AS events
GROUP BY app_id, hour;

INSERT INTO app_hourly_failures (app_id, hour, reason, deliveries)
SELECT app_id, date_trunc('hour', coalesce(failed_at, dead_at)), coalesce(reason, 'unknown'), count(*)
FROM deliveries
WHERE kind = 'push' AND state IN ('failed', 'dead') AND coalesce(failed_at, dead_at) > now() - interval '8 days'
GROUP BY 1, 2, 3;

INSERT INTO notification_minute_sends (notification_id, minute, sent)
SELECT notification_id, date_trunc('minute', sent_at), count(*)
FROM deliveries WHERE kind = 'push' AND state = 'sent' AND sent_at IS NOT NULL
GROUP BY 1, 2;
