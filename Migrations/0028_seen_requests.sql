-- Signed server requests accepted while their signature is still good (SeenRequestStore): a
-- second request with the same credential and signature is a replay and is refused. A row goes a
-- quarter of an hour after its signature's Date falls out of the 15-minute window.
--
-- By hand: SELECT count(*), min(until) FROM seen_requests;
CREATE TABLE seen_requests (
    digest  bytea PRIMARY KEY CHECK (length(digest) = 16),
    until   timestamptz NOT NULL
);
CREATE INDEX seen_requests_until_idx ON seen_requests (until);
