-- record_delivery_webhook_events: writes the webhook events of pushes (sent, failed, dead,
-- delivered, opened) to webhook_events, for every webhook of the app that wants them, in the same
-- transaction as the change they report, so an event exists exactly when its change committed.
-- WebhookQueueStore groups a webhook's pending events into batches and POSTs them.
--
-- Statement-level, over the transition tables: one INSERT … SELECT per statement, whatever its
-- size. Pushes and Live Activity events: kind = 'sync' deliveries are the service's own silent
-- signals. Most
-- installations have few webhooks, so a statement of an app without one costs one index probe;
-- a claim (state → running) reports nothing and does not wait for lock_webhook_event_order.
--
-- By hand: SELECT * FROM webhook_events ORDER BY id DESC LIMIT 10;

CREATE OR REPLACE FUNCTION record_delivery_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Most installations have few webhooks: a statement of an app without one costs one index probe.
    IF NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.app_id IN (SELECT DISTINCT app_id FROM new_deliveries)) THEN
        RETURN NULL;
    END IF;
    -- A claim (state → running) reports nothing, and must not wait for the lock below.
    IF NOT EXISTS (
        SELECT 1 FROM new_deliveries n JOIN old_deliveries o ON o.id = n.id
        WHERE n.kind <> 'sync' AND ((n.state <> o.state AND n.state IN ('sent', 'failed', 'dead'))
              OR (n.delivered_at IS NOT NULL AND o.delivered_at IS NULL) OR (n.opened_at IS NOT NULL AND o.opened_at IS NULL))
    ) THEN
        RETURN NULL;
    END IF;
    PERFORM lock_webhook_event_order(ARRAY(SELECT DISTINCT app_id FROM new_deliveries));
    INSERT INTO webhook_events (webhook_id, type, occurred_at, payload)
    SELECT w.id, e.type, e.at, jsonb_strip_nulls(jsonb_build_object(
               'notification_id', n.notification_id, 'delivery_id', n.id, 'device_id', n.device_id,
               'user_alias', d.user_alias, 'reason', e.reason, 'gateway_status', e.gateway_status))
    FROM old_deliveries o
    JOIN new_deliveries n ON n.id = o.id
    CROSS JOIN LATERAL (VALUES
        (1, CASE WHEN n.state = 'sent' AND o.state <> 'sent' THEN 'sent' END, coalesce(n.sent_at, now()), NULL, NULL::integer),
        (2, CASE WHEN n.state = 'failed' AND o.state <> 'failed' THEN 'failed' END, coalesce(n.failed_at, now()), n.reason, n.gateway_status),
        (3, CASE WHEN n.state = 'dead' AND o.state <> 'dead' THEN 'dead' END, coalesce(n.dead_at, now()), n.reason, n.gateway_status),
        (4, CASE WHEN n.delivered_at IS NOT NULL AND o.delivered_at IS NULL THEN 'delivered' END, n.delivered_at, NULL, NULL),
        (5, CASE WHEN n.opened_at IS NOT NULL AND o.opened_at IS NULL THEN 'opened' END, n.opened_at, NULL, NULL)
    ) AS e(position, type, at, reason, gateway_status)
    JOIN webhooks w ON w.app_id = n.app_id AND e.type = ANY (w.events)
    JOIN devices d ON d.id = n.device_id
    WHERE n.kind <> 'sync' AND e.type IS NOT NULL
    ORDER BY n.id, e.position, w.id;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER deliveries_webhook_events AFTER UPDATE ON deliveries
    REFERENCING OLD TABLE AS old_deliveries NEW TABLE AS new_deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION record_delivery_webhook_events();
