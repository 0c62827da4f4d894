-- Scheduled sends. A notification with send_at is fanned out once that instant comes, so its
-- audience is the one registered then. One with local_send_at (a wall-clock time) is fanned out
-- from the moment that time comes in the earliest time zone (UTC+14), each delivery due when it
-- comes in the device's own time zone.
ALTER TABLE notifications ADD COLUMN send_at timestamptz;
ALTER TABLE notifications ADD COLUMN local_send_at timestamp;
ALTER TABLE notifications ADD CONSTRAINT notifications_one_schedule CHECK (send_at IS NULL OR local_send_at IS NULL);
-- When fan-out may begin; nothing waits for it when null.
ALTER TABLE notifications ADD COLUMN fanout_after timestamptz
    GENERATED ALWAYS AS (COALESCE(send_at, (local_send_at - interval '14 hours') AT TIME ZONE 'UTC')) STORED;
