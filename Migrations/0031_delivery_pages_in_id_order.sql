-- The console and the admin API page through deliveries in id order (keyset on id, 50 at a time).
-- Without an index that gives that order for what they filter on, PostgreSQL walks the primary key
-- of every partition from the lowest id, through every earlier notification's deliveries, to find
-- the first 50: seconds on a database of millions (docs/performance.md, row 9).
--
-- A notification's deliveries of one state, in id order: the index on (notification_id, state)
-- takes id as a third column. Its lookups by notification and state are served as before, and a
-- page of every state reads each state's first 50 and keeps the lowest (NotificationStore). A
-- separate (notification_id, id) would serve the page alone but cost the queue one more index entry
-- per delivery on every claim and every record (its state changes, so no update is HOT): 10 to
-- 15 % of the queue's throughput here.
--
-- Built under the table's lock, like every index of a migration: on a large `deliveries` the
-- upgrade holds writes to it for as long as the build takes (1.4 s for 2,000,000 rows here).
--
-- By hand: EXPLAIN SELECT id FROM deliveries WHERE notification_id = 1 AND state = 'sent' ORDER BY id LIMIT 50;
--          EXPLAIN SELECT id FROM deliveries WHERE state = 'dead' ORDER BY id LIMIT 50;

DROP INDEX deliveries_notification_state_idx;
CREATE INDEX deliveries_notification_state_idx ON deliveries (notification_id, state, id);

-- Dead deliveries of every app (the queue page); deliveries_dead_idx serves one app's. Only dead
-- rows have an entry, so the queue's other writes do not pay for it.
CREATE INDEX deliveries_dead_id_idx ON deliveries (id) WHERE state = 'dead';
