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

-- Statement-level, reading the rows a statement changed as a whole, so a bulk import writes one
-- INSERT … SELECT of events per batch rather than one per device.
CREATE FUNCTION record_registered_devices() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO device_events (device_id, event, detail)
    SELECT id, 'registered', COALESCE('user ' || user_alias, 'anonymous') FROM inserted_devices ORDER BY id;
    RETURN NULL;
END
$$;

CREATE FUNCTION record_changed_devices() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO device_events (device_id, event, detail)
    SELECT n.id, e.event, e.detail
    FROM old_devices o
    JOIN new_devices n ON n.id = o.id
    CROSS JOIN LATERAL (VALUES
        (1, CASE WHEN n.user_alias IS DISTINCT FROM o.user_alias
                 THEN CASE WHEN n.user_alias IS NULL THEN 'anonymised' ELSE 'user_changed' END END,
            COALESCE(o.user_alias, 'anonymous') || ' → ' || COALESCE(n.user_alias, 'anonymous')),
        -- Tokens are shown by their first 8 characters only.
        (2, CASE WHEN lower(n.token) IS DISTINCT FROM lower(o.token) AND n.merged_into IS NULL THEN 'token_changed' END,
            left(o.token, 8) || '… → ' || left(n.token, 8) || '…'),
        (3, CASE WHEN n.merged_into IS NOT NULL AND o.merged_into IS NULL THEN 'merged' END, 'into device ' || n.merged_into),
        (4, CASE WHEN n.invalidated_at IS NOT NULL AND o.invalidated_at IS NULL THEN 'invalidated' END, n.invalidation_reason),
        (5, CASE WHEN n.unregistered_at IS NOT NULL AND o.unregistered_at IS NULL AND n.merged_into IS NULL THEN 'unregistered' END, NULL),
        (6, CASE WHEN (o.unregistered_at IS NOT NULL AND n.unregistered_at IS NULL)
                   OR (o.invalidated_at IS NOT NULL AND n.invalidated_at IS NULL) THEN 'registered_again' END, NULL)
    ) AS e(position, event, detail)
    WHERE e.event IS NOT NULL
    ORDER BY n.id, e.position;
    RETURN NULL;
END
$$;

CREATE TRIGGER devices_history_insert AFTER INSERT ON devices
    REFERENCING NEW TABLE AS inserted_devices
    FOR EACH STATEMENT EXECUTE FUNCTION record_registered_devices();
CREATE TRIGGER devices_history_update AFTER UPDATE ON devices
    REFERENCING OLD TABLE AS old_devices NEW TABLE AS new_devices
    FOR EACH STATEMENT EXECUTE FUNCTION record_changed_devices();
