-- A session's token is stored as HMAC-SHA256 under a key derived from the admin token, not as a
-- plain SHA-256: changing the admin token (say, after it leaked) then ends every session signed
-- in with the old one, as it did when the cookie itself was signed with that key. Sessions made
-- before this migration cannot be checked under the key and are ended: operators sign in again.
DELETE FROM dashboard_sessions;
ALTER TABLE dashboard_sessions RENAME COLUMN token_sha256 TO token_digest;
ALTER TABLE dashboard_sessions RENAME CONSTRAINT dashboard_sessions_token_sha256_check TO dashboard_sessions_token_digest_check;
