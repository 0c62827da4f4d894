-- Web Push (RFC 8030, 8291, 8292): browsers register as devices of provider 'webpush', their token
-- the subscription's endpoint and their keys in push_keys; each app that sends to them has a VAPID
-- key pair (webpush_settings).
--
-- The provider list stays a CHECK rather than a foreign key to a table of providers: every new
-- device would then lock that table's one row for its provider (KEY SHARE), and concurrent
-- registrations would share that lock through multixacts. Each provider's migration widens it.
--
-- By hand: SELECT provider, count(*) FROM devices GROUP BY 1;
--          SELECT app_id, subject, public_key, misconfiguration_reason FROM webpush_settings;

ALTER TABLE devices DROP CONSTRAINT devices_provider_check,
    ADD CONSTRAINT devices_provider_check CHECK (provider IN ('apns', 'fcm', 'webpush'));
ALTER TABLE sandbox_pushes DROP CONSTRAINT sandbox_pushes_provider_check,
    ADD CONSTRAINT sandbox_pushes_provider_check CHECK (provider IN ('apns', 'fcm', 'webpush'));

-- What a provider needs besides the token to reach the device: for Web Push the browser's P-256
-- public key and authentication secret ({"p256dh": …, "auth": …}, base64url). Personal data: an
-- erasure clears it with the token.
ALTER TABLE devices ADD COLUMN push_keys jsonb CHECK (jsonb_typeof(push_keys) = 'object');

CREATE TABLE webpush_settings (
    app_id                   bigint PRIMARY KEY REFERENCES apps (id) ON DELETE CASCADE,
    -- The contact push services see in every request's VAPID token: mailto: or https:.
    subject                  text NOT NULL CHECK (subject ~ '^(mailto:|https:)' AND length(subject) <= 255),
    -- The VAPID public key browsers subscribe with (applicationServerKey): an uncompressed P-256
    -- point, base64url.
    public_key               text NOT NULL,
    -- The private key, PEM, sealed with the master key like every gateway secret.
    sealed_private_key       bytea NOT NULL,
    master_key_id            text,
    -- Set when push services refuse the VAPID signature itself; sending stops until the settings change.
    misconfigured_at         timestamptz,
    misconfiguration_reason  text,
    updated_at               timestamptz NOT NULL DEFAULT now()
);
