-- Notifications, their per-device deliveries (the delivery queue), and per-app APNs settings.

-- How an app reaches APNs: token-based auth with its .p8 key. The key is sealed with
-- NOTIFIABLE_MASTER_KEY (associated data 'apns:<app_id>').
CREATE TABLE apns_settings (
    app_id                   bigint PRIMARY KEY REFERENCES apps (id) ON DELETE CASCADE,
    key_id                   text NOT NULL CHECK (key_id ~ '^[A-Za-z0-9]{1,32}$'),
    team_id                  text NOT NULL CHECK (team_id ~ '^[A-Za-z0-9]{1,32}$'),
    bundle_id                text NOT NULL CHECK (length(bundle_id) BETWEEN 1 AND 255),
    sealed_private_key       bytea NOT NULL,
    environment              text NOT NULL CHECK (environment IN ('production', 'sandbox')),
    -- An explicit base URL (and a CA to trust for it) instead of Apple's hosts: tests, proxies.
    endpoint                 text,
    trusted_ca_pem           text,
    -- Set when APNs says the configuration itself is wrong (bad key, topic, certificate):
    -- sending for the app stops until the settings change.
    misconfigured_at         timestamptz,
    misconfiguration_reason  text,
    updated_at               timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE notifications (
    id               bigserial PRIMARY KEY,
    app_id           bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    idempotency_key  text CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    content          jsonb NOT NULL,
    targeting        jsonb NOT NULL,
    expires_at       timestamptz,
    -- fanning_out: deliveries are still being created; fanned_out: all exist; cancelled.
    state            text NOT NULL DEFAULT 'fanning_out' CHECK (state IN ('fanning_out', 'fanned_out', 'cancelled')),
    -- Fan-out walks the app's devices in id order; it resumes after this id.
    fanout_cursor    bigint NOT NULL DEFAULT 0,
    -- A fan-out worker holds the notification until then; past it, another may take over.
    fanout_locked_until timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    fanned_out_at    timestamptz,
    cancelled_at     timestamptz
);
-- The same idempotency key within an app names the same notification.
CREATE UNIQUE INDEX notifications_idempotency_key ON notifications (app_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX notifications_app_newest_idx ON notifications (app_id, id DESC);
CREATE INDEX notifications_fanning_out_idx ON notifications (id) WHERE state = 'fanning_out';

-- One row per (notification, device): the queue. States:
--   available  ready to send from run_at on
--   running    claimed by a worker until locked_until (its lease); attempts counts claims
--   retrying   a transient failure; sent again from run_at on
--   sent       the gateway accepted it            (final)
--   failed     the gateway refused it for good    (final)
--   dead       retries exhausted or expired; an operator may re-queue it
--   cancelled  the notification or the device went away first (final)
CREATE TABLE deliveries (
    id               bigserial PRIMARY KEY,
    notification_id  bigint NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
    app_id           bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    device_id        bigint NOT NULL REFERENCES devices (id),
    state            text NOT NULL DEFAULT 'available'
                     CHECK (state IN ('available', 'running', 'retrying', 'sent', 'failed', 'dead', 'cancelled')),
    attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    run_at           timestamptz NOT NULL DEFAULT now(),
    locked_until     timestamptz CHECK ((state = 'running') = (locked_until IS NOT NULL)),
    -- The gateway's id for the accepted push (apns-id), its last HTTP status and reason.
    gateway_id       text,
    gateway_status   integer,
    reason           text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    -- The last claim by a worker: sent_at - claimed_at is the time spent on the gateway.
    claimed_at       timestamptz,
    sent_at          timestamptz,
    failed_at        timestamptz,
    dead_at          timestamptz,
    cancelled_at     timestamptz,
    -- Reported by the SDKs; opened implies delivered.
    delivered_at     timestamptz,
    opened_at        timestamptz,
    UNIQUE (notification_id, device_id)
);
-- Workers claim the oldest ready deliveries.
CREATE INDEX deliveries_ready_idx ON deliveries (run_at) WHERE state IN ('available', 'retrying');
-- The rescuer finds expired leases.
CREATE INDEX deliveries_running_idx ON deliveries (locked_until) WHERE state = 'running';
-- Operators list dead deliveries.
CREATE INDEX deliveries_dead_idx ON deliveries (app_id, id) WHERE state = 'dead';
-- Counters and per-notification listings.
CREATE INDEX deliveries_notification_state_idx ON deliveries (notification_id, state);
-- A device's deliveries (unregister cancels them, merge moves them).
CREATE INDEX deliveries_device_idx ON deliveries (device_id, state);
