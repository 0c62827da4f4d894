-- What an app's notifications get when they leave it unsaid (PushDefaults in the code):
-- - android_style: 'data' sends FCM data-only messages, which the Notifiable Android SDK builds
--   its notification from and reports as delivered; 'notification' adds FCM's notification block
--   so Android draws it while the app is in the background.
-- - default_ttl_seconds: how long a notification without ttl_seconds/expires_at waits for an
--   offline device (APNs' apns-expiration, FCM's ttl); four weeks, FCM's own default and limit.
-- - default_mutable_content / default_content_available: iOS flags for apps whose service
--   extension or background handler reports receipt.
ALTER TABLE apps
    ADD COLUMN android_style text NOT NULL DEFAULT 'data' CHECK (android_style IN ('data', 'notification')),
    ADD COLUMN default_ttl_seconds integer NOT NULL DEFAULT 2419200 CHECK (default_ttl_seconds BETWEEN 60 AND 2419200),
    ADD COLUMN default_mutable_content boolean NOT NULL DEFAULT false,
    ADD COLUMN default_content_available boolean NOT NULL DEFAULT false;

-- SHA-256 of the request body a notification was created from (its JSON with keys sorted,
-- without the idempotency key), so that an idempotency key reused with another body is refused
-- instead of answered with the first notification. NULL for notifications created before.
ALTER TABLE notifications ADD COLUMN request_digest bytea;
