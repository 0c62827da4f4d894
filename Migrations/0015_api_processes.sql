-- The API processes serving now, each beating every few seconds. Rate limits are divided among
-- the live ones, so that N processes together keep a limit without a write per request.
CREATE TABLE api_processes (
    id          uuid PRIMARY KEY,
    host        text NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    seen_at     timestamptz NOT NULL DEFAULT now()
);
