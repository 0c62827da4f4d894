-- Apps (tenants), their API credentials, and their devices.

CREATE TABLE apps (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Two pairs per app: 'device' (shipped inside mobile apps) and 'server' (the app's backend).
-- The secret is stored sealed with NOTIFIABLE_MASTER_KEY (AES-256-GCM: nonce, ciphertext, tag),
-- with the access id as associated data.
CREATE TABLE app_credentials (
    access_id      text PRIMARY KEY,
    app_id         bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    role           text NOT NULL CHECK (role IN ('device', 'server')),
    sealed_secret  bytea NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    revoked_at     timestamptz
);
CREATE INDEX app_credentials_app_id_idx ON app_credentials (app_id);

CREATE TABLE devices (
    id                   bigserial PRIMARY KEY,
    app_id               bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    provider             text NOT NULL CHECK (provider IN ('apns', 'fcm')),
    token                text NOT NULL CHECK (length(token) BETWEEN 1 AND 4096),
    name                 text CHECK (length(name) <= 255),
    user_alias           text CHECK (length(user_alias) BETWEEN 1 AND 255),
    language             text CHECK (language ~ '^[a-z]{2,3}$'),
    country              text CHECK (country ~ '^[a-z]{2}$'),
    custom_properties    jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(custom_properties) = 'object'),
    platform_properties  jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(platform_properties) = 'object'),
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    -- Last time the token was (re-)registered: a gateway's "token dead" verdict dated before
    -- this is stale and must not invalidate the device.
    registered_at        timestamptz NOT NULL DEFAULT now(),
    -- Set when a gateway reports the token dead; the device is never targeted again
    -- unless the app registers the token anew.
    invalidated_at       timestamptz,
    invalidation_reason  text,
    -- Set when the app unregisters the device; the row stays so delivery history stays readable.
    unregistered_at      timestamptz,
    -- Set when an update moved another device onto this row's token: this row keeps its
    -- history but no longer holds the token.
    merged_into          bigint REFERENCES devices (id)
);

-- A token is held by one device per app, compared case-insensitively.
CREATE UNIQUE INDEX devices_app_token_key ON devices (app_id, lower(token)) WHERE merged_into IS NULL;
-- Fan-out walks an app's devices in id order.
CREATE INDEX devices_app_id_idx ON devices (app_id, id);
-- A user's devices: listing and targeting by alias.
CREATE INDEX devices_app_user_alias_idx ON devices (app_id, user_alias)
    WHERE user_alias IS NOT NULL AND unregistered_at IS NULL;
