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

-- The triggers that write the events, in id order per app: record_delivery_webhook_events,
-- record_device_webhook_events, lock_webhook_event_order (Sources/NotifiableStore/Webhooks/SQL/).
