-- record_device_webhook_events: writes an 'invalidated' webhook event when a gateway reports a
-- device's token dead, for every webhook of the app that wants it, in the same transaction as the
-- change, as record_delivery_webhook_events does for pushes. Statement-level, over the transition
-- tables; a statement of an app without a webhook costs one index probe.

CREATE OR REPLACE FUNCTION record_device_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.app_id IN (SELECT DISTINCT app_id FROM new_devices)) THEN
        RETURN NULL;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM new_devices n JOIN old_devices o ON o.id = n.id
                   WHERE n.invalidated_at IS NOT NULL AND o.invalidated_at IS NULL) THEN
        RETURN NULL;
    END IF;
    PERFORM lock_webhook_event_order(ARRAY(SELECT DISTINCT app_id FROM new_devices));
    INSERT INTO webhook_events (webhook_id, type, occurred_at, payload)
    SELECT w.id, 'invalidated', n.invalidated_at, jsonb_strip_nulls(jsonb_build_object(
               'device_id', n.id, 'user_alias', n.user_alias, 'reason', n.invalidation_reason))
    FROM old_devices o
    JOIN new_devices n ON n.id = o.id
    JOIN webhooks w ON w.app_id = n.app_id AND 'invalidated' = ANY (w.events)
    WHERE n.invalidated_at IS NOT NULL AND o.invalidated_at IS NULL
    ORDER BY n.id, w.id;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER devices_webhook_events AFTER UPDATE ON devices
    REFERENCING OLD TABLE AS old_devices NEW TABLE AS new_devices
    FOR EACH STATEMENT EXECUTE FUNCTION record_device_webhook_events();
