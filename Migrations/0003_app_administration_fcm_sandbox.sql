-- App administration (delivery mode, credential rotation, master key ids), per-app FCM
-- settings, and the pushes recorded for apps in sandbox mode.

-- 'sandbox': the app's pushes go to the fake gateways built into the worker, not to Apple or
-- Google, and are recorded in sandbox_pushes.
ALTER TABLE apps ADD COLUMN delivery_mode text NOT NULL DEFAULT 'live' CHECK (delivery_mode IN ('live', 'sandbox'));
ALTER TABLE apps ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();

-- A rotated-out credential keeps working until expires_at (the grace period a rollout needs).
ALTER TABLE app_credentials ADD COLUMN expires_at timestamptz;

-- The id of the master key that sealed each secret (so the master key can be rotated: see
-- `notifiable keys rotate`). NULL: sealed before ids were recorded.
ALTER TABLE app_credentials ADD COLUMN master_key_id text;
ALTER TABLE apns_settings ADD COLUMN master_key_id text;

-- How one app reaches FCM (HTTP v1): its service account. The whole service-account JSON is
-- sealed with NOTIFIABLE_MASTER_KEY (associated data 'fcm:<app_id>'); project and client email
-- are kept in the clear so operators can see which account is configured.
CREATE TABLE fcm_settings (
    app_id                   bigint PRIMARY KEY REFERENCES apps (id) ON DELETE CASCADE,
    project_id               text NOT NULL CHECK (length(project_id) BETWEEN 1 AND 255),
    client_email             text NOT NULL CHECK (length(client_email) BETWEEN 1 AND 255),
    sealed_service_account   bytea NOT NULL,
    master_key_id            text,
    -- An explicit base URL (and a CA to trust for it) instead of https://fcm.googleapis.com.
    endpoint                 text,
    trusted_ca_pem           text,
    -- Set when FCM refuses the configuration itself; sending stops until the settings change.
    misconfigured_at         timestamptz,
    misconfiguration_reason  text,
    updated_at               timestamptz NOT NULL DEFAULT now()
);

-- Sent in sandbox mode (to the built-in fake gateway) rather than to Apple or Google.
ALTER TABLE deliveries ADD COLUMN sandbox boolean NOT NULL DEFAULT false;

-- What the built-in fake gateways received for apps in sandbox mode: the exact request.
CREATE TABLE sandbox_pushes (
    id               bigserial PRIMARY KEY,
    app_id           bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    delivery_id      bigint NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    notification_id  bigint NOT NULL,
    device_id        bigint NOT NULL,
    provider         text NOT NULL CHECK (provider IN ('apns', 'fcm')),
    token            text NOT NULL,
    headers          jsonb NOT NULL DEFAULT '{}',
    -- The request body exactly as sent (text, not jsonb, so key order and spacing survive).
    payload          text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sandbox_pushes_app_newest_idx ON sandbox_pushes (app_id, id DESC);
-- One recorded push per delivery: recording a batch again (its commit unacknowledged) adds nothing.
CREATE UNIQUE INDEX sandbox_pushes_delivery_key ON sandbox_pushes (delivery_id);

-- Each device's history, as operators read it: registered, moved to another user, anonymised,
-- token changed, merged into another device, invalidated (and why), unregistered, registered
-- again. Kept by a trigger, so every path that changes a device (API, imports, workers) is seen.
CREATE TABLE device_events (
    id         bigserial PRIMARY KEY,
    device_id  bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    event      text NOT NULL CHECK (event IN ('registered', 'user_changed', 'anonymised', 'token_changed', 'merged',
                                              'invalidated', 'unregistered', 'registered_again')),
    detail     text,
    at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX device_events_device_idx ON device_events (device_id, id);

-- The triggers that write it: record_registered_devices and record_changed_devices
-- (Sources/NotifiableStore/Registry/SQL/).
