-- Admin API keys: each belongs to an operator and acts with its role and app scope
-- (OperatorKeyStore). Only the key's SHA-256 is stored; the key is shown once.
--
-- By hand, an operator's live keys:
--   SELECT k.id, k.label, k.expires_at FROM operator_keys k JOIN operators o ON o.id = k.operator_id
--   WHERE o.name = 'ada' AND k.revoked_at IS NULL;
CREATE TABLE operator_keys (
    id            bigserial PRIMARY KEY,
    operator_id   bigint NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
    label         text NOT NULL CHECK (length(label) BETWEEN 1 AND 64),
    digest        bytea NOT NULL UNIQUE CHECK (length(digest) = 32),
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    revoked_at    timestamptz,
    last_used_at  timestamptz
);
CREATE INDEX operator_keys_operator_idx ON operator_keys (operator_id, id);
