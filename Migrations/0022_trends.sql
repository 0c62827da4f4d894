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

-- The trigger that appends them: deliveries_count_changes
-- (Sources/NotifiableStore/Notifications/SQL/deliveries_count_changes.sql).

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
