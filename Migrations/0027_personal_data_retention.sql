-- Retention reaches every table that names a person (RetentionStore; docs/operations.md lists
-- them): device history and Live Activity tokens go by age, found through these indexes.
--
-- By hand, history a 30-day retention would remove:
--   SELECT count(*) FROM device_events WHERE at < now() - interval '30 days';
CREATE INDEX device_events_at_idx ON device_events (at);
CREATE INDEX live_activity_tokens_updated_idx ON live_activity_tokens (updated_at);
CREATE INDEX push_to_start_tokens_updated_idx ON push_to_start_tokens (updated_at);
