-- Dashboard sign-ins, kept in the database so that signing out ends a session for every API
-- process at once, and the session cookie stops working the moment it is ended rather than when
-- it expires. The cookie holds a random token; only its SHA-256 is stored, so the table gives
-- nobody a working session.
CREATE TABLE dashboard_sessions (
    token_sha256 bytea PRIMARY KEY CHECK (length(token_sha256) = 32),
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    ended_at     timestamptz,
    -- Where the sign-in came from (the client's address), for operators reading who is signed in.
    client       text
);

-- Expired sessions are removed when new ones are made.
CREATE INDEX dashboard_sessions_expires_idx ON dashboard_sessions (expires_at);
