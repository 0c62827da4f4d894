-- Incompatible with the previous release: its API processes would keep queueing Live Activity
-- events as sync deliveries, which this release neither counts nor cancels at an activity's end.
--
-- A Live Activity's pushes are deliveries of their own kind, 'activity', beside 'push' (a
-- notification to its audience) and 'sync' (a stateful notification's silent signal). Like a sync
-- signal, an activity event carries its own content and is sent to each device in order, a newer
-- one taking the place of one still waiting. Unlike a signal, it is what the team sent: it counts in
-- its notification's counters, its failures in the trends, its outcomes in the webhooks, and a dead
-- one can be re-queued (deliveries_count_changes, record_delivery_webhook_events, DeadDeliveries).
--
-- By hand: SELECT kind, state, count(*) FROM deliveries GROUP BY 1, 2;
--
-- The constraints change in one statement, so deliveries are read once to check them; the table
-- is locked meanwhile (reads too) and while the three indexes are built (docs/operations.md).

LOCK TABLE notifications, deliveries IN SHARE ROW EXCLUSIVE MODE;

ALTER TABLE deliveries
    DROP CONSTRAINT deliveries_kind_check,
    DROP CONSTRAINT deliveries_sync_has_content,
    ADD CONSTRAINT deliveries_kind_check CHECK (kind IN ('push', 'sync', 'activity')),
    ADD CONSTRAINT deliveries_own_content CHECK ((kind <> 'push') = (content IS NOT NULL));

-- The events queued before: sync deliveries of an activity's notification. The triggers in place
-- now count pushes only, so the counts they gain are appended here, as the triggers will append
-- them for every later change.
CREATE TEMPORARY TABLE activity_deliveries ON COMMIT DROP AS
SELECT q.id, q.day FROM deliveries q JOIN live_activities a ON a.notification_id = q.notification_id WHERE q.kind = 'sync';

UPDATE deliveries q SET kind = 'activity' FROM activity_deliveries m WHERE q.id = m.id AND q.day = m.day;

INSERT INTO notification_counter_changes (notification_id, pending, retrying, sent, failed, dead, cancelled, delivered, opened)
SELECT * FROM delivery_count_change(ARRAY(
    SELECT (q.notification_id, q.state, q.delivered_at IS NOT NULL, q.opened_at IS NOT NULL, count(*))::counted_delivery
    FROM deliveries q JOIN activity_deliveries m ON q.id = m.id AND q.day = m.day
    GROUP BY q.notification_id, q.state, q.delivered_at IS NOT NULL, q.opened_at IS NOT NULL
));

-- One event waiting per token: a newer one takes its place (LiveActivityDeliveries).
CREATE UNIQUE INDEX deliveries_available_activity_key ON deliveries (notification_id, device_id, day)
    WHERE kind = 'activity' AND state = 'available';

-- The claim's look for an older event still running, or a newer one queued, to the same device
-- (claim_deliveries): one index for signals and events, which never share a notification.
DROP INDEX deliveries_sync_idx;
CREATE INDEX deliveries_in_order_idx ON deliveries (notification_id, device_id, id) WHERE kind <> 'push';

-- A notification's latest error, now also an activity's.
DROP INDEX deliveries_latest_error_idx;
CREATE INDEX deliveries_latest_error_idx ON deliveries (notification_id, updated_at DESC)
    WHERE kind <> 'sync' AND reason IS NOT NULL AND state IN ('retrying', 'failed', 'dead');
