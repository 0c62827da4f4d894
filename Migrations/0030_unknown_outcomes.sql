-- Attempts whose outcome the worker could not know: no answer came after the request may have
-- reached the gateway (its deadline passed on the wire, the connection was lost under it), or the
-- worker's lease ran out while the delivery was in its hands. Only such an attempt can have shown
-- a push twice, so a gateway's duplicates are bounded by this count (docs/faults.md).
--
-- By hand: SELECT state, sum(unknown_outcomes) FROM deliveries WHERE notification_id = 1 GROUP BY state;
ALTER TABLE deliveries ADD COLUMN unknown_outcomes smallint NOT NULL DEFAULT 0;
