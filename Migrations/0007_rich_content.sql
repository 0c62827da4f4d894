-- Rich content: a notification may carry content too big for a push (an image, a JSON
-- document), fetched by the devices it was sent to. Its pushes wait until the content is there.
ALTER TABLE notifications ADD COLUMN rich boolean NOT NULL DEFAULT false;
ALTER TABLE notifications ADD COLUMN awaiting_content boolean NOT NULL DEFAULT false;
ALTER TABLE notifications ADD CONSTRAINT notifications_awaiting_content_is_rich CHECK (rich OR NOT awaiting_content);

CREATE TABLE notification_contents (
    notification_id  bigint PRIMARY KEY REFERENCES notifications (id) ON DELETE CASCADE,
    app_id           bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    media_type       text NOT NULL CHECK (length(media_type) BETWEEN 3 AND 255),
    data             bytea NOT NULL CHECK (length(data) BETWEEN 1 AND 1048576),
    -- The hex SHA-256 of data: the ETag, and a check a client can make.
    sha256           text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);
-- bytea of up to 1 MB is kept out of line (TOAST) and compressed where that helps; images
-- rarely compress, so do not try.
ALTER TABLE notification_contents ALTER COLUMN data SET STORAGE EXTERNAL;
