-- Signed webhooks for delivery events: an app's backend hears what became of its pushes
-- (sent, failed, dead, delivered, opened) and of its devices (invalidated) without polling.
--
-- Events are written by triggers in the same transaction as the change they report, so an
-- event exists exactly when its change committed. A worker groups a webhook's pending events
-- into batches and POSTs them, one batch of a webhook at a time, oldest first.

CREATE TABLE webhooks (
    id                    bigserial PRIMARY KEY,
    app_id                bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    url                   text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
    events                text[] NOT NULL CHECK (cardinality(events) > 0
                              AND events <@ ARRAY['sent', 'failed', 'invalidated', 'delivered', 'opened', 'dead']),
    -- The signing secret, sealed with NOTIFIABLE_MASTER_KEY (associated data 'webhook:<id>').
    sealed_secret         bytea NOT NULL,
    master_key_id         text,
    -- A paused webhook still collects events; it sends nothing until an operator resumes it.
    state                 text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'paused')),
    paused_at             timestamptz CHECK ((state = 'paused') = (paused_at IS NOT NULL)),
    paused_reason         text,
    -- Failed attempts since the last delivered batch: drives backoff, and pausing.
    consecutive_failures  integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_app_idx ON webhooks (app_id, id);

-- The queue: one row per POST body. A webhook has at most one unfinished batch (the unique
-- index below), so a receiver gets batches in order and one at a time.
--   available → running → delivered
--                       ↘ retrying → running … (the lease expiring also lands in retrying)
CREATE TABLE webhook_batches (
    id              bigserial PRIMARY KEY,
    webhook_id      bigint NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    state           text NOT NULL DEFAULT 'available' CHECK (state IN ('available', 'running', 'retrying', 'delivered')),
    attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    run_at          timestamptz NOT NULL DEFAULT now(),
    locked_until    timestamptz CHECK ((state = 'running') = (locked_until IS NOT NULL)),
    -- The receiver's last HTTP status (NULL: no answer) and what went wrong.
    last_status     integer,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz
);
-- Workers claim ready batches; operators list a webhook's batches newest first.
CREATE INDEX webhook_batches_ready_idx ON webhook_batches (run_at) WHERE state IN ('available', 'retrying');
CREATE INDEX webhook_batches_running_idx ON webhook_batches (locked_until) WHERE state = 'running';
CREATE INDEX webhook_batches_webhook_idx ON webhook_batches (webhook_id, id);
-- Delivered batches past retention are pruned.
CREATE INDEX webhook_batches_delivered_idx ON webhook_batches (delivered_at) WHERE state = 'delivered';
-- Two workers forming a batch for the same webhook at once: the second insert does nothing.
CREATE UNIQUE INDEX webhook_batches_one_unfinished_key ON webhook_batches (webhook_id) WHERE state <> 'delivered';

-- One row per (webhook, event): its id is the event id the receiver sees and de-duplicates by.
CREATE TABLE webhook_events (
    id           bigserial PRIMARY KEY,
    webhook_id   bigint NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    type         text NOT NULL CHECK (type IN ('sent', 'failed', 'invalidated', 'delivered', 'opened', 'dead')),
    occurred_at  timestamptz NOT NULL,
    -- notification_id, delivery_id, device_id, user_alias, reason, gateway_status where known.
    payload      jsonb NOT NULL,
    -- NULL until a batch carries it; a batch is deleted only once delivered and past retention.
    batch_id     bigint REFERENCES webhook_batches (id) ON DELETE CASCADE
);
CREATE INDEX webhook_events_pending_idx ON webhook_events (webhook_id, id) WHERE batch_id IS NULL;
CREATE INDEX webhook_events_batch_idx ON webhook_events (batch_id, id);

-- An app's events must become visible in the order of their ids, or a batch formed while an
-- earlier id is still uncommitted would send a later event first. So ids are drawn under a
-- per-app lock held until commit: only transactions that record events for the same app wait,
-- and only from their recording statement to their commit. Apps in ascending order, so two
-- statements touching several apps cannot deadlock.
CREATE FUNCTION lock_webhook_event_order(app_ids bigint[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(8008, (w.app_id % 2147483647)::int4)
    FROM (SELECT DISTINCT app_id FROM webhooks WHERE app_id = ANY (app_ids) ORDER BY app_id) w;
END
$$;

-- Statement-level, like the device history: one INSERT … SELECT per statement, whatever its size.
-- Pushes only: kind = 'sync' deliveries are the service's own silent signals.
CREATE FUNCTION record_delivery_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Most installations have few webhooks: a statement of an app without one costs one index probe.
    IF NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.app_id IN (SELECT DISTINCT app_id FROM new_deliveries)) THEN
        RETURN NULL;
    END IF;
    -- A claim (state → running) reports nothing, and must not wait for the lock below.
    IF NOT EXISTS (
        SELECT 1 FROM new_deliveries n JOIN old_deliveries o ON o.id = n.id
        WHERE n.kind = 'push' AND ((n.state <> o.state AND n.state IN ('sent', 'failed', 'dead'))
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
    WHERE n.kind = 'push' AND e.type IS NOT NULL
    ORDER BY n.id, e.position, w.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER deliveries_webhook_events AFTER UPDATE ON deliveries
    REFERENCING OLD TABLE AS old_deliveries NEW TABLE AS new_deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION record_delivery_webhook_events();

CREATE FUNCTION record_device_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER devices_webhook_events AFTER UPDATE ON devices
    REFERENCING OLD TABLE AS old_devices NEW TABLE AS new_devices
    FOR EACH STATEMENT EXECUTE FUNCTION record_device_webhook_events();
