-- Operators of the console, each with a role; admins and editors are given apps one by one.
-- Passwords are scrypt hashes (see PasswordHash.swift); disabling keeps the row for the audit log.
CREATE TABLE operators (
    id            bigserial PRIMARY KEY,
    name          text NOT NULL UNIQUE CHECK (name = lower(name) AND length(name) BETWEEN 1 AND 64),
    role          text NOT NULL CHECK (role IN ('owner', 'admin', 'editor', 'viewer')),
    password_hash text NOT NULL CHECK (password_hash LIKE 'scrypt$%'),
    created_at    timestamptz NOT NULL DEFAULT now(),
    disabled_at   timestamptz
);

CREATE TABLE operator_apps (
    operator_id bigint NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
    app_id      bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    PRIMARY KEY (operator_id, app_id)
);
CREATE INDEX operator_apps_app_idx ON operator_apps (app_id);

-- A session belongs to an operator, or to whoever typed the admin token (NULL).
ALTER TABLE dashboard_sessions ADD COLUMN operator_id bigint REFERENCES operators (id) ON DELETE CASCADE;

-- Every state-changing action, from the console, the admin API and the command line: who, what,
-- which app, when, from where, and how it ended. No foreign keys: the record outlives what it
-- names (a deleted app, a removed operator).
CREATE TABLE audit_log (
    id       bigserial PRIMARY KEY,
    at       timestamptz NOT NULL DEFAULT now(),
    -- 'operator:<name>', 'admin-token' or 'cli:<os user>'
    actor    text NOT NULL,
    -- 'console', 'admin-api' or 'cli'
    channel  text NOT NULL CHECK (channel IN ('console', 'admin-api', 'cli')),
    -- e.g. 'POST /dashboard/apps/3/compose' or 'apps rotate-credentials'
    action   text NOT NULL,
    app_id   bigint,
    -- The client's address, or the host for the command line.
    origin   text,
    -- The HTTP status answered (the command line: 0 done, 1 refused).
    status   integer NOT NULL,
    detail   jsonb
);
CREATE INDEX audit_log_app_idx ON audit_log (app_id, id) WHERE app_id IS NOT NULL;
