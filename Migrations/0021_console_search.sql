-- The console finds a device by the first characters of its push token, in any app: a prefix
-- LIKE on lower(token) is answered by this index whatever the database's collation.
CREATE INDEX devices_token_prefix_idx ON devices (lower(token) text_pattern_ops) WHERE merged_into IS NULL;
