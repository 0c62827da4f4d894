-- lock_webhook_event_order(app_ids): an app's webhook events must become visible in the order of
-- their ids, or a batch formed while an earlier id is still uncommitted would send a later event
-- first. So the triggers that record events (record_delivery_webhook_events,
-- record_device_webhook_events) draw ids under this per-app advisory lock, held until commit: only
-- transactions that record events for the same app wait, and only from their recording statement
-- to their commit. Apps in ascending order, so two statements touching several apps cannot
-- deadlock; an app without a webhook takes no lock.

CREATE OR REPLACE FUNCTION lock_webhook_event_order(app_ids bigint[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(8008, (w.app_id % 2147483647)::int4)
    FROM (SELECT DISTINCT app_id FROM webhooks WHERE app_id = ANY (app_ids) ORDER BY app_id) w;
END
$$;
