-- deliveries_count_changes: keeps each notification's delivery counters as its deliveries change,
-- instead of counting them on every read, so reading them (NotificationCounterStore) costs the
-- same for 1 delivery or 1,000,000.
--
-- Every statement that inserts, updates or deletes deliveries appends, through the triggers below
-- and in its own transaction, one row per notification whose counts it changed to
-- notification_counter_changes: each delivery it inserted adds one to the count of its state (and
-- to delivered and opened when it has been), each it deleted takes one away, and each it updated
-- does both, old row out and new row in (delivery_count_change says which state goes to which
-- counter). Appending means concurrent workers never wait on a shared counter row. The queue's
-- maintenance folds those rows into notification_counters; a read adds the folded totals and the
-- changes not folded yet in one statement (one snapshot), so the sum is exact whenever it is read:
-- a rolled-back statement appends nothing, a killed worker's uncommitted batch neither.
--
-- Statement-level, over the transition tables, so a batch of 500 appends one row, not 500; a
-- statement that changes no count (a claim from available, a lease renewal) appends none. The rows
-- are grouped before they are counted (a 1,000,000-row statement makes a handful of counted rows).
-- Pushes and Live Activity events count (kind <> 'sync'): sync signals of stateful notifications
-- are not its audience.
-- On the partitioned deliveries, the statement's transition tables hold the rows of every day.
--
-- An update also appends the pushes that failed for good or gave up in it, by app and reason, to
-- delivery_failure_changes, folded into the trends (TrendStore.foldFailures).
--
-- Retention's own deletes are not counted: it says so with `SET LOCAL notifiable.retention = 'on'`
-- in their transaction (RetentionStore), and a notification kept past its deliveries keeps its
-- counters, as when whole days are dropped. Every other delete (an app's or a device's cascade) is.
--
-- By hand: SELECT * FROM notification_counter_changes ORDER BY id DESC LIMIT 10;

CREATE OR REPLACE FUNCTION deliveries_count_changes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO notification_counter_changes
            (notification_id, pending, retrying, sent, failed, dead, cancelled, delivered, opened)
        SELECT * FROM delivery_count_change(ARRAY(
            SELECT (notification_id, state, delivered_at IS NOT NULL, opened_at IS NOT NULL, count(*))::counted_delivery
            FROM inserted WHERE kind <> 'sync'
            GROUP BY notification_id, state, delivered_at IS NOT NULL, opened_at IS NOT NULL
        ));
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO notification_counter_changes
            (notification_id, pending, retrying, sent, failed, dead, cancelled, delivered, opened)
        SELECT * FROM delivery_count_change(ARRAY(
            SELECT (notification_id, state, delivered_at IS NOT NULL, opened_at IS NOT NULL, count(*))::counted_delivery
            FROM updated WHERE kind <> 'sync'
            GROUP BY notification_id, state, delivered_at IS NOT NULL, opened_at IS NOT NULL
            UNION ALL
            SELECT (notification_id, state, delivered_at IS NOT NULL, opened_at IS NOT NULL, -count(*))::counted_delivery
            FROM previous WHERE kind <> 'sync'
            GROUP BY notification_id, state, delivered_at IS NOT NULL, opened_at IS NOT NULL
        ));
        -- Pushes that failed for good or gave up in this statement, by app and reason. Most
        -- statements (claims, sends, status events) fail none, and the check stops there.
        IF EXISTS (SELECT 1 FROM updated WHERE state IN ('failed', 'dead') AND kind <> 'sync') THEN
            INSERT INTO delivery_failure_changes (app_id, reason, deliveries)
            SELECT u.app_id, coalesce(u.reason, 'unknown'), count(*)
            FROM updated u JOIN previous p ON p.id = u.id
            WHERE u.kind <> 'sync' AND u.state IN ('failed', 'dead') AND p.state NOT IN ('failed', 'dead')
            GROUP BY u.app_id, coalesce(u.reason, 'unknown');
        END IF;
    ELSIF current_setting('notifiable.retention', true) IS DISTINCT FROM 'on' THEN
        INSERT INTO notification_counter_changes
            (notification_id, pending, retrying, sent, failed, dead, cancelled, delivered, opened)
        SELECT * FROM delivery_count_change(ARRAY(
            SELECT (notification_id, state, delivered_at IS NOT NULL, opened_at IS NOT NULL, -count(*))::counted_delivery
            FROM removed WHERE kind <> 'sync'
            GROUP BY notification_id, state, delivered_at IS NOT NULL, opened_at IS NOT NULL
        ));
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER deliveries_counted_insert AFTER INSERT ON deliveries
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION deliveries_count_changes();

CREATE OR REPLACE TRIGGER deliveries_counted_update AFTER UPDATE ON deliveries
    REFERENCING OLD TABLE AS previous NEW TABLE AS updated
    FOR EACH STATEMENT EXECUTE FUNCTION deliveries_count_changes();

CREATE OR REPLACE TRIGGER deliveries_counted_delete AFTER DELETE ON deliveries
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION deliveries_count_changes();
