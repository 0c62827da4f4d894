-- Stateful notifications: each targeted user's copy of a notification with its read and
-- action state, a per-user change feed, verified users, and sync signals on the queue.

-- Verified users. User tokens are HS256-signed with a key derived from the master key, the
-- app id and this generation; raising the generation revokes every token the app issued.
ALTER TABLE apps ADD COLUMN user_token_generation integer NOT NULL DEFAULT 1 CHECK (user_token_generation >= 1);
-- When set, a device may take a user alias only with that user's token.
ALTER TABLE apps ADD COLUMN require_verified_alias boolean NOT NULL DEFAULT false;

-- How many users each stateful notification reached and how many of them, as things stand,
-- have read, dismissed or activated it. Kept in the transaction that changes a user's state,
-- so the figures stay exact after users delete their copies and expired ones are purged.
ALTER TABLE notifications ADD COLUMN stateful boolean NOT NULL DEFAULT false;
ALTER TABLE notifications ADD COLUMN users_targeted integer NOT NULL DEFAULT 0;
ALTER TABLE notifications ADD COLUMN users_read integer NOT NULL DEFAULT 0;
ALTER TABLE notifications ADD COLUMN users_dismissed integer NOT NULL DEFAULT 0;
ALTER TABLE notifications ADD COLUMN users_activated integer NOT NULL DEFAULT 0;

-- One row per (stateful notification, targeted user) while it lives. Deleted by the user, or
-- purged once past expires_at; the change feed keeps the record of both.
CREATE TABLE user_notifications (
    id                 bigserial PRIMARY KEY,
    app_id             bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    notification_id    bigint NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
    user_alias         text NOT NULL,
    read_state         text NOT NULL DEFAULT 'unread' CHECK (read_state IN ('unread', 'read')),
    user_action_state  text NOT NULL DEFAULT 'no_interaction'
                       CHECK (user_action_state IN ('no_interaction', 'dismissed', 'activated')),
    expires_at         timestamptz NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (notification_id, user_alias)
);
-- A user's list, newest first.
CREATE INDEX user_notifications_user_idx ON user_notifications (app_id, user_alias, notification_id DESC);
-- The purge finds what has expired.
CREATE INDEX user_notifications_expiry_idx ON user_notifications (expires_at);

-- Each user's change feed is numbered 1, 2, 3, … by this row: a writer takes the row's lock
-- to number its changes and holds it until it commits, so a user's changes commit in the
-- order of their numbers and a reader never sees change n + 1 before change n.
CREATE TABLE user_feeds (
    app_id          bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    user_alias      text NOT NULL,
    last_seq        bigint NOT NULL DEFAULT 0,
    -- Changes up to this number were pruned; a cursor before it cannot be caught up.
    pruned_through  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, user_alias)
);

CREATE TABLE user_notification_changes (
    app_id             bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    user_alias         text NOT NULL,
    seq                bigint NOT NULL,
    notification_id    bigint NOT NULL,
    kind               text NOT NULL CHECK (kind IN ('created', 'updated', 'deleted', 'expired')),
    read_state         text NOT NULL,
    user_action_state  text NOT NULL,
    -- The device that made the change, when it said which.
    device_id          bigint,
    changed_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, user_alias, seq)
);
CREATE INDEX user_notification_changes_age_idx ON user_notification_changes (changed_at);

-- Sync signals ride the delivery queue: a 'sync' delivery is a background push telling one
-- device a user notification's new state. It carries its own content and expiry. At most one
-- is available per (notification, device): a newer state replaces its content, so a burst of
-- changes sends one signal; a claim cancels a signal that a newer one supersedes.
ALTER TABLE deliveries ADD COLUMN kind text NOT NULL DEFAULT 'push' CHECK (kind IN ('push', 'sync'));
ALTER TABLE deliveries ADD COLUMN content jsonb;
ALTER TABLE deliveries ADD COLUMN expires_at timestamptz;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_sync_has_content CHECK ((kind = 'sync') = (content IS NOT NULL));
ALTER TABLE deliveries DROP CONSTRAINT deliveries_notification_id_device_id_key;
CREATE UNIQUE INDEX deliveries_push_key ON deliveries (notification_id, device_id) WHERE kind = 'push';
CREATE UNIQUE INDEX deliveries_available_sync_key ON deliveries (notification_id, device_id)
    WHERE kind = 'sync' AND state = 'available';
-- A claim looks for a newer or a running signal of the same device and notification.
CREATE INDEX deliveries_sync_idx ON deliveries (notification_id, device_id, id) WHERE kind = 'sync';
