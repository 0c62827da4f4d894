-- A notification's delivery counters are kept as its deliveries change, instead of counted on
-- every read: reading them costs the same for 1 delivery or 1,000,000.
--
-- Every statement that inserts, updates or deletes deliveries appends, through the triggers of
-- deliveries_count_changes and in its own transaction, one row per notification whose counts it
-- changed to notification_counter_changes. Appending means concurrent workers never wait on a
-- shared counter row. The queue's maintenance folds those rows into notification_counters; a read adds
-- the folded totals and the changes not folded yet, in one statement (one snapshot), so the sum
-- is exact whenever it is read: a rolled-back statement appends nothing, a killed worker's
-- uncommitted batch neither.
--
-- Only push deliveries count (sync signals of stateful notifications are not the
-- notification's audience). "pending" is available or running: a claim from available changes
-- no count, so a claim appends nothing; nor does a lease renewal.

-- Writes to both tables wait while this runs (the backfill and the index): about as long as a
-- scan of deliveries. Taken together and first, in the order the service's own transactions take
-- them, so a running older release cannot deadlock with it.
LOCK TABLE notifications, deliveries IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE notification_counters (
    notification_id bigint PRIMARY KEY REFERENCES notifications (id) ON DELETE CASCADE,
    pending          bigint NOT NULL DEFAULT 0,
    retrying         bigint NOT NULL DEFAULT 0,
    sent             bigint NOT NULL DEFAULT 0,
    failed           bigint NOT NULL DEFAULT 0,
    dead             bigint NOT NULL DEFAULT 0,
    cancelled        bigint NOT NULL DEFAULT 0,
    delivered        bigint NOT NULL DEFAULT 0,
    opened           bigint NOT NULL DEFAULT 0
);

-- No foreign key: a notification's deletion cascades to its deliveries, whose trigger then
-- appends changes for a notification already gone; the fold discards them.
CREATE TABLE notification_counter_changes (
    id               bigserial PRIMARY KEY,
    notification_id  bigint NOT NULL,
    pending          bigint NOT NULL,
    retrying         bigint NOT NULL,
    sent             bigint NOT NULL,
    failed           bigint NOT NULL,
    dead             bigint NOT NULL,
    cancelled        bigint NOT NULL,
    delivered        bigint NOT NULL,
    opened           bigint NOT NULL
);
CREATE INDEX notification_counter_changes_notification_idx ON notification_counter_changes (notification_id);

-- Deliveries as counted: `weight` of them (negative: taken away) in the count of their state,
-- and of delivered and opened when they have been.
CREATE TYPE counted_delivery AS (notification_id bigint, state text, delivered boolean, opened boolean, weight bigint);

-- What counted deliveries change, per notification; notifications whose counts come out
-- unchanged are left out. The one place that says which state goes to which counter.
CREATE FUNCTION delivery_count_change(counted counted_delivery[]) RETURNS TABLE (
    notification_id bigint, pending bigint, retrying bigint, sent bigint, failed bigint, dead bigint,
    cancelled bigint, delivered bigint, opened bigint
) LANGUAGE sql IMMUTABLE AS $$
    SELECT * FROM (
        SELECT c.notification_id,
               coalesce(sum(c.weight) FILTER (WHERE c.state IN ('available', 'running')), 0),
               coalesce(sum(c.weight) FILTER (WHERE c.state = 'retrying'), 0),
               coalesce(sum(c.weight) FILTER (WHERE c.state = 'sent'), 0),
               coalesce(sum(c.weight) FILTER (WHERE c.state = 'failed'), 0),
               coalesce(sum(c.weight) FILTER (WHERE c.state = 'dead'), 0),
               coalesce(sum(c.weight) FILTER (WHERE c.state = 'cancelled'), 0),
               coalesce(sum(c.weight) FILTER (WHERE c.delivered), 0),
               coalesce(sum(c.weight) FILTER (WHERE c.opened), 0)
        FROM unnest(counted) AS c
        GROUP BY c.notification_id
    ) AS change (notification_id, pending, retrying, sent, failed, dead, cancelled, delivered, opened)
    WHERE (pending, retrying, sent, failed, dead, cancelled, delivered, opened) <> (0, 0, 0, 0, 0, 0, 0, 0)
$$;

-- The triggers that keep the counts: deliveries_count_changes and deliveries_truncated
-- (Sources/NotifiableStore/Notifications/SQL/).

INSERT INTO notification_counters (notification_id, pending, retrying, sent, failed, dead, cancelled, delivered, opened)
SELECT change.* FROM notifications n
CROSS JOIN LATERAL delivery_count_change(ARRAY(
    SELECT (d.notification_id, d.state, d.delivered_at IS NOT NULL, d.opened_at IS NOT NULL, count(*))::counted_delivery
    FROM deliveries d WHERE d.notification_id = n.id AND d.kind = 'push'
    GROUP BY d.notification_id, d.state, d.delivered_at IS NOT NULL, d.opened_at IS NOT NULL
)) AS change;

-- The latest error of a notification is read from the newest of its failed deliveries: this
-- index makes that one row's lookup, not a sort of every failure.
CREATE INDEX deliveries_latest_error_idx ON deliveries (notification_id, updated_at DESC)
    WHERE kind = 'push' AND reason IS NOT NULL AND state IN ('retrying', 'failed', 'dead');
