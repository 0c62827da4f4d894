-- Live Activities. A device registers the push token of each activity it shows (by the id the
-- app's backend gave the activity) and, per ActivityKit attributes type, a push-to-start token.
-- Each activity has one notification; every event (start, update, end) queues one 'sync'
-- delivery per token with its own content and push_token, so the claim keeps an activity's
-- pushes to a device in order and cancels one that a newer event supersedes, as it does for
-- stateful notifications' signals.
--
-- By hand: SELECT * FROM live_activities WHERE app_id = 1;

CREATE TABLE live_activities (
    id               bigserial PRIMARY KEY,
    app_id           bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    activity_id      text NOT NULL CHECK (length(activity_id) BETWEEN 1 AND 255),
    notification_id  bigint NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
    state            text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'ended')),
    -- Seconds since 1970 of the last event accepted: the next one's aps.timestamp is never less.
    last_timestamp   bigint NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    ended_at         timestamptz,
    UNIQUE (app_id, activity_id)
);

CREATE TABLE live_activity_tokens (
    app_id           bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    activity_id      text NOT NULL,
    device_id        bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    token            text NOT NULL,
    attributes_type  text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, activity_id, device_id)
);
CREATE INDEX live_activity_tokens_device_idx ON live_activity_tokens (device_id);

CREATE TABLE push_to_start_tokens (
    device_id        bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    attributes_type  text NOT NULL CHECK (length(attributes_type) BETWEEN 1 AND 255),
    token            text NOT NULL,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (device_id, attributes_type)
);
