-- The console and the admin API page through deliveries in id order (keyset on id, 50 at a time).
-- Without an index that gives that order for what they filter on, PostgreSQL walks the primary key
-- of every partition from the lowest id, through every earlier notification's deliveries, to find
-- the first 50: seconds on a database of millions (docs/performance.md, row 9).
--
-- Built under the table's lock, like every index of a migration: on a large `deliveries` the
-- upgrade holds writes to it for as long as the build takes (0.9 s for 2,000,000 rows here).
--
-- By hand: EXPLAIN SELECT id FROM deliveries WHERE notification_id = 1 ORDER BY id LIMIT 50;
--          EXPLAIN SELECT id FROM deliveries WHERE state = 'dead' ORDER BY id LIMIT 50;

-- A notification's deliveries, whatever their state.
CREATE INDEX deliveries_notification_idx ON deliveries (notification_id, id);

-- Dead deliveries of every app (the queue page); deliveries_dead_idx serves one app's.
CREATE INDEX deliveries_dead_id_idx ON deliveries (id) WHERE state = 'dead';
