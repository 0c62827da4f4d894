-- Workers' claims become fair across apps and honour priority. Until now the queue was one line
-- in run_at order: another app's push accepted while a 300,000-device broadcast was sending
-- waited for the whole broadcast. Now each claim shares its batch equally among the apps with
-- deliveries ready, and within an app takes `high` before `normal`, oldest first, keeping a tenth
-- of the app's share for `normal` so that a stream of `high` never holds it back for good.
--
-- Reads and writes of deliveries wait while this runs. Adding the column is instant (its default
-- is not written to existing rows); the backfill reads the unsettled deliveries through their
-- partial indexes; building the new index reads the whole table once (a partial index is built
-- from a full scan), which on a table of years of history is the long part.
LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE;

-- The queue priority of a delivery, APNs's numbers: 10 sends now, 5 may wait (the notification's
-- "priority": "high" or "normal"; sync signals are 5). Copied from the notification at fan-out,
-- so a claim never reads a notification's content to order its queue.
ALTER TABLE deliveries ADD COLUMN priority smallint NOT NULL DEFAULT 10;
-- NOT VALID: every existing row holds the default, so there is nothing to check; new rows are.
ALTER TABLE deliveries ADD CONSTRAINT deliveries_priority_check CHECK (priority IN (5, 10)) NOT VALID;

-- Every delivery that may still be sent: waiting, in flight (it may be retried), or dead (it may be
-- re-queued).
UPDATE deliveries q SET priority = 5
WHERE q.state IN ('available', 'retrying', 'running', 'dead')
  AND (q.kind = 'sync' OR q.notification_id IN (SELECT n.id FROM notifications n WHERE n.content ->> 'priority' = 'normal'));

-- Where among the apps (by id) the last claim stopped; the next starts after it. A sequence, set
-- with setval, because setval is not transactional: claims never wait on one another for it.
CREATE SEQUENCE deliveries_claim_position MINVALUE 0 START 0;

-- Each app's waiting deliveries, by priority then run time: a claim finds the apps with work from
-- its leading column, one probe per app, then each app's oldest ready ones at each priority.
CREATE INDEX deliveries_waiting_idx ON deliveries (app_id, priority, run_at) WHERE state IN ('available', 'retrying');
DROP INDEX deliveries_ready_idx;

-- The claim itself: claim_deliveries and ready_apps (Sources/NotifiableStore/Queue/SQL/).
