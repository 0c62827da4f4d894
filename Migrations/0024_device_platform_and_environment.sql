-- What a current app shows needs two facts of a device at send time: the operating system of a
-- device registered through FCM (an iPhone on Firebase needs the message's apns block) and the APNs
-- host its token belongs to (a debug build's token is the sandbox's). Both are columns of devices,
-- and the claim returns them with the delivery's badge, and a delivery's own token (a Live
-- Activity's) in place of its device's: claim_deliveries
-- (Sources/NotifiableStore/Queue/SQL/claim_deliveries.sql).
--
-- Badges that count: a device keeps the badge the service last sent it (the app resets it to 0 when
-- it opens), and a delivery the badge it carries, fixed at fan-out so that a retry sends the same
-- number.
--
-- Apps get a default Android notification channel, and APNs settings a second host for the
-- environment the app's settings do not name (tests and private gateways; Apple's own otherwise).

-- The checks are NOT VALID: every existing row is NULL there, and validating would scan every
-- device under the ALTER TABLE lock. New and changed rows are checked all the same.
ALTER TABLE devices
    ADD COLUMN platform text,
    ADD COLUMN apns_environment text,
    ADD CONSTRAINT devices_platform_check CHECK (platform IN ('ios', 'android')) NOT VALID,
    ADD CONSTRAINT devices_apns_environment_check CHECK (apns_environment IN ('sandbox', 'production')) NOT VALID;

-- The service keeps it within 0…99999 (LEAST at fan-out, the API's range on update).
ALTER TABLE devices ADD COLUMN badge integer NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN badge integer;
-- A push to a Live Activity goes to the activity's token, not the device's: the delivery says so.
ALTER TABLE deliveries ADD COLUMN push_token text;

ALTER TABLE apps ADD COLUMN default_android_channel_id text CHECK (length(default_android_channel_id) BETWEEN 1 AND 255);

ALTER TABLE apns_settings ADD COLUMN sandbox_endpoint text;
