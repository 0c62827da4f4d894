-- Broadcast channels for Live Activities (iOS 18). An activity that many people follow (a score, a
-- flight) gets one APNs channel; devices subscribe with the channel's id, and each update or end is
-- one broadcast to the channel instead of one push per token. The channel is made and deleted at
-- Apple by the workers (ActivityChannelStage), so a request never waits on Apple: the activity
-- records where its channel stands.
--
-- channel_state: requested (to be made) → open (channel_id known) → closing (the activity ended;
-- deleted once its last broadcast settled) → closed; failed when Apple refused to make it.
--
-- By hand: SELECT activity_id, channel_state, channel_id, channel_error FROM live_activities WHERE channel_state IS NOT NULL;
--          SELECT activity_id, state, count(*) FROM activity_broadcasts GROUP BY 1, 2;

ALTER TABLE live_activities
    ADD COLUMN channel_state text CHECK (channel_state IN ('requested', 'open', 'closing', 'closed', 'failed')),
    ADD COLUMN channel_id text,
    -- Apple's message-storage-policy: 1 keeps the latest broadcast for a device that is offline.
    ADD COLUMN channel_message_storage boolean NOT NULL DEFAULT false,
    ADD COLUMN channel_error text,
    ADD COLUMN channel_attempts integer NOT NULL DEFAULT 0,
    ADD COLUMN channel_run_at timestamptz,
    ADD COLUMN channel_locked_until timestamptz,
    -- Counts the leases taken on its channel work: an answer is recorded only under its own lease.
    ADD COLUMN channel_claims integer NOT NULL DEFAULT 0,
    ADD CONSTRAINT live_activities_open_channel_has_id CHECK (channel_state IS DISTINCT FROM 'open' OR channel_id IS NOT NULL);

-- What the workers have to do at Apple: channels to make and to delete.
CREATE INDEX live_activities_channel_work_idx ON live_activities (channel_run_at) WHERE channel_state IN ('requested', 'closing');

-- One broadcast per event of an activity with an open channel, sent in order; one waiting is
-- replaced by a newer event's (the claim cancels an older one that a newer follows).
CREATE TABLE activity_broadcasts (
    id               bigserial PRIMARY KEY,
    app_id           bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    activity_id      text NOT NULL,
    notification_id  bigint NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
    channel_id       text NOT NULL,
    content          jsonb NOT NULL,
    expires_at       timestamptz NOT NULL,
    state            text NOT NULL DEFAULT 'available'
                     CHECK (state IN ('available', 'running', 'retrying', 'sent', 'failed', 'dead', 'cancelled')),
    attempts         integer NOT NULL DEFAULT 0,
    run_at           timestamptz NOT NULL DEFAULT now(),
    locked_until     timestamptz,
    reason           text,
    gateway_status   integer,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    sent_at          timestamptz,
    CHECK ((state = 'running') = (locked_until IS NOT NULL))
);
CREATE UNIQUE INDEX activity_broadcasts_available_key ON activity_broadcasts (app_id, activity_id) WHERE state = 'available';
CREATE INDEX activity_broadcasts_waiting_idx ON activity_broadcasts (run_at) WHERE state IN ('available', 'retrying');
CREATE INDEX activity_broadcasts_activity_idx ON activity_broadcasts (app_id, activity_id, id);
CREATE INDEX activity_broadcasts_running_idx ON activity_broadcasts (locked_until) WHERE state = 'running';
