-- A person's data, findable by alias and removable in one call (PersonErasureStore), and device
-- history that names only the device's current user to whoever reads it later.
--
-- By hand, what an app holds about "alice":
--   SELECT id FROM devices WHERE app_id = 1 AND user_alias = 'alice'
--   UNION SELECT e.device_id FROM device_events e JOIN devices d ON d.id = e.device_id
--         WHERE d.app_id = 1 AND e.previous_alias = 'alice';

-- History keeps aliases in columns of their own, so a reader can show the one the device has now
-- and say "a previous user" for the others, and erasure can find devices that ever had an alias.
ALTER TABLE device_events ADD COLUMN user_alias text, ADD COLUMN previous_alias text;
UPDATE device_events SET user_alias = substr(detail, 6), detail = NULL
WHERE event = 'registered' AND detail LIKE 'user %';
UPDATE device_events SET detail = NULL WHERE event = 'registered';
UPDATE device_events
SET previous_alias = NULLIF(split_part(detail, ' → ', 1), 'anonymous'),
    user_alias = NULLIF(split_part(detail, ' → ', 2), 'anonymous'),
    detail = NULL
WHERE event IN ('user_changed', 'anonymised') AND detail LIKE '% → %';
CREATE INDEX device_events_previous_alias_idx ON device_events (previous_alias) WHERE previous_alias IS NOT NULL;

-- An erased device stays as an anonymous row: its deliveries keep the notification counters
-- exact, and nothing in it names anyone.
ALTER TABLE devices ADD COLUMN erased_at timestamptz;
CREATE INDEX devices_app_any_alias_idx ON devices (app_id, user_alias) WHERE user_alias IS NOT NULL;
CREATE INDEX devices_merged_into_idx ON devices (merged_into) WHERE merged_into IS NOT NULL;

-- What else names a device or a user, reachable by index rather than by a scan.
CREATE INDEX sandbox_pushes_device_idx ON sandbox_pushes (device_id);
CREATE INDEX webhook_events_device_idx ON webhook_events ((payload ->> 'device_id')) WHERE payload ? 'device_id';
CREATE INDEX notifications_user_aliases_idx ON notifications USING gin ((targeting -> 'user_aliases'));
CREATE INDEX push_to_start_tokens_device_idx ON push_to_start_tokens (device_id);

-- Erasures are audit-logged when a backend asks for them with server credentials too.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_channel_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_channel_check CHECK (channel IN ('console', 'admin-api', 'cli', 'api'));

-- The history triggers that fill the alias columns: record_registered_devices and
-- record_changed_devices (Sources/NotifiableStore/Registry/SQL/).
