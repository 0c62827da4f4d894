-- Signed requests accepted while their signature is still good (SeenRequestStore): a second
-- request with the same signature, method, target and body is a replay and is refused. A row
-- goes a minute after its signature's Date falls out of the 15-minute window.
--
-- By hand: SELECT count(*), min(until) FROM seen_requests;
CREATE TABLE seen_requests (
    digest  bytea PRIMARY KEY CHECK (length(digest) = 16),
    until   timestamptz NOT NULL
);
CREATE INDEX seen_requests_until_idx ON seen_requests (until);
