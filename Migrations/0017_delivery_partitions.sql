-- Deliveries become a table partitioned by day, so that retention drops whole days instead of
-- deleting rows one by one (no long locks, no bloat, vacuum and indexes bounded by the window).
--
-- A delivery's day (days since 1970-01-01, UTC) is its notification's: the day its send was
-- scheduled for, or the day it was created when unscheduled. All of a notification's pushes
-- share one partition, so the unique (notification, device) key below, which must name the day,
-- still allows one push per device and notification. A sync signal's day is the day it is
-- queued: it may come long after its notification, whose day may already be gone.
--
-- The day is also the top 32 bits of the delivery's id. The queue's statements know only ids
-- (claim, record, lease); with the day in the id they name the one partition to visit instead of
-- probing every day's index. deliveries_day_in_id keeps the two equal.
--
-- The rows already here become the partition deliveries_legacy: their ids are below 2^32, so
-- their day is 0. Retention drops it whole once its newest row is past the retention period.
-- On a populated table this migration costs one scan (the two checks) and three unique index
-- builds over the existing rows, under an exclusive lock; docs/operations.md gives the time per
-- million rows measured on it.

LOCK TABLE deliveries, sandbox_pushes IN ACCESS EXCLUSIVE MODE;

CREATE FUNCTION delivery_day(at timestamptz) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN floor(extract(epoch FROM at) / 86400)::integer;

CREATE FUNCTION delivery_day_of(id bigint) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (id >> 32)::integer;

-- The low 32 bits come from the one sequence: unique within a day unless a single day holds
-- more than four billion deliveries.
CREATE FUNCTION next_delivery_id(day integer) RETURNS bigint
LANGUAGE sql VOLATILE
RETURN (day::bigint << 32) | (nextval('deliveries_id_seq') & 4294967295);

CREATE FUNCTION delivery_partition_name(day integer) RETURNS text
LANGUAGE sql IMMUTABLE
RETURN 'deliveries_' || to_char(DATE '1970-01-01' + day, 'YYYY_MM_DD');

DO $$
BEGIN
    IF (SELECT max(id) FROM deliveries) >= 4294967296 THEN
        RAISE EXCEPTION 'deliveries ids reach 2^32; they cannot be moved into the partitioned layout as day 0';
    END IF;
END
$$;

-- The existing table, renamed with its indexes, becomes the first partition.
ALTER TABLE sandbox_pushes DROP CONSTRAINT sandbox_pushes_delivery_id_fkey;
ALTER TABLE deliveries ADD COLUMN day integer NOT NULL DEFAULT 0;
ALTER TABLE deliveries RENAME TO deliveries_legacy;
ALTER TABLE deliveries_legacy DROP CONSTRAINT deliveries_pkey;
DROP INDEX deliveries_push_key, deliveries_available_sync_key;
ALTER INDEX deliveries_dead_idx RENAME TO deliveries_legacy_dead_idx;
ALTER INDEX deliveries_device_idx RENAME TO deliveries_legacy_device_idx;
ALTER INDEX deliveries_latest_error_idx RENAME TO deliveries_legacy_latest_error_idx;
ALTER INDEX deliveries_notification_state_idx RENAME TO deliveries_legacy_notification_state_idx;
ALTER INDEX deliveries_running_idx RENAME TO deliveries_legacy_running_idx;
ALTER INDEX deliveries_sync_idx RENAME TO deliveries_legacy_sync_idx;
ALTER INDEX deliveries_waiting_idx RENAME TO deliveries_legacy_waiting_idx;
ALTER TABLE deliveries_legacy RENAME CONSTRAINT deliveries_app_id_fkey TO deliveries_legacy_app_id_fkey;
ALTER TABLE deliveries_legacy RENAME CONSTRAINT deliveries_device_id_fkey TO deliveries_legacy_device_id_fkey;
ALTER TABLE deliveries_legacy RENAME CONSTRAINT deliveries_notification_id_fkey TO deliveries_legacy_notification_id_fkey;
ALTER TABLE deliveries_legacy VALIDATE CONSTRAINT deliveries_priority_check;
ALTER TABLE deliveries_legacy
    ADD CONSTRAINT deliveries_day_in_id CHECK (delivery_day_of(id) = day),
    ADD CONSTRAINT deliveries_legacy_day CHECK (day < 1);
ALTER TABLE deliveries_legacy ADD CONSTRAINT deliveries_legacy_pkey PRIMARY KEY (id, day);
CREATE UNIQUE INDEX deliveries_legacy_push_key ON deliveries_legacy (notification_id, device_id, day) WHERE kind = 'push';
CREATE UNIQUE INDEX deliveries_legacy_available_sync_key ON deliveries_legacy (notification_id, device_id, day)
    WHERE kind = 'sync' AND state = 'available';

CREATE TABLE deliveries (LIKE deliveries_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (day);
ALTER TABLE deliveries DROP CONSTRAINT deliveries_legacy_day;
ALTER TABLE deliveries
    ALTER COLUMN day SET DEFAULT delivery_day(now()),
    ALTER COLUMN id SET DEFAULT next_delivery_id(delivery_day(now()));
ALTER SEQUENCE deliveries_id_seq OWNED BY deliveries.id;
ALTER TABLE deliveries_legacy ALTER COLUMN id DROP DEFAULT;

ALTER TABLE deliveries ATTACH PARTITION deliveries_legacy FOR VALUES FROM (MINVALUE) TO (1);

-- Each index on the partitioned table adopts the legacy partition's matching index.
ALTER TABLE deliveries ADD CONSTRAINT deliveries_pkey PRIMARY KEY (id, day);
CREATE UNIQUE INDEX deliveries_push_key ON deliveries (notification_id, device_id, day) WHERE kind = 'push';
CREATE UNIQUE INDEX deliveries_available_sync_key ON deliveries (notification_id, device_id, day)
    WHERE kind = 'sync' AND state = 'available';
CREATE INDEX deliveries_dead_idx ON deliveries (app_id, id) WHERE state = 'dead';
CREATE INDEX deliveries_device_idx ON deliveries (device_id, state);
CREATE INDEX deliveries_latest_error_idx ON deliveries (notification_id, updated_at DESC)
    WHERE kind = 'push' AND reason IS NOT NULL AND state IN ('retrying', 'failed', 'dead');
CREATE INDEX deliveries_notification_state_idx ON deliveries (notification_id, state);
CREATE INDEX deliveries_running_idx ON deliveries (locked_until) WHERE state = 'running';
CREATE INDEX deliveries_sync_idx ON deliveries (notification_id, device_id, id) WHERE kind = 'sync';
CREATE INDEX deliveries_waiting_idx ON deliveries (app_id, priority, run_at) WHERE state IN ('available', 'retrying');

-- Each foreign key adopts the legacy partition's own, already validated.
ALTER TABLE deliveries ADD CONSTRAINT deliveries_app_id_fkey FOREIGN KEY (app_id) REFERENCES apps (id) ON DELETE CASCADE;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_device_id_fkey FOREIGN KEY (device_id) REFERENCES devices (id);
ALTER TABLE deliveries ADD CONSTRAINT deliveries_notification_id_fkey
    FOREIGN KEY (notification_id) REFERENCES notifications (id) ON DELETE CASCADE;

-- Its triggers: deliveries_count_changes and deliveries_truncated
-- (Sources/NotifiableStore/Notifications/SQL/), record_delivery_webhook_events
-- (Sources/NotifiableStore/Webhooks/SQL/).

-- Creates the partition of one day, unless it exists; answers whether it created it. An empty
-- table is attached rather than created as a partition: ATTACH takes a lock that lets the queue
-- go on (SHARE UPDATE EXCLUSIVE on deliveries), CREATE … PARTITION OF one that stops it. The
-- attach also adds the day's foreign keys, which takes a share lock on apps, devices and
-- notifications that stops their writes: it waits at most 200 ms for it, and the caller tries
-- again later (days are made ahead). Processes that race for the same day queue on an advisory lock.
CREATE FUNCTION create_delivery_partition(day integer) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    name text := delivery_partition_name(day);
    previous_timeout text := current_setting('lock_timeout');
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('deliveries partitions'));
    IF to_regclass(name) IS NOT NULL THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE %I (LIKE deliveries INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name);
    PERFORM set_config('lock_timeout', '200ms', true);
    EXECUTE format('ALTER TABLE deliveries ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', name, day, day + 1);
    PERFORM set_config('lock_timeout', previous_timeout, true);
    RETURN true;
END
$$;

-- The days around now, so that the API's first sync signals and the worker's first fan-out find
-- their partitions; the service keeps creating them ahead from here on.
SELECT create_delivery_partition(d) FROM generate_series(delivery_day(now()) - 1, delivery_day(now()) + 7) AS d;

-- Every partition with the days it holds: delivery_partitions
-- (Sources/NotifiableStore/Retention/SQL/delivery_partitions.sql).

-- The queue's floor: no delivery before this day waits or runs. The queue's statements name it,
-- so that they plan and probe only the days that can hold work (a few) instead of every day kept
-- (a month): with 40 days, planning one step of the claim took 11 ms instead of 0.2.
--
-- It moves down when a statement makes deliveries of an earlier day wait: a notification fanned
-- out days after it was created, or dead deliveries re-queued (lower_delivery_queue_floor, which
-- locks the row until that statement's transaction ends). Maintenance moves it up past the days
-- with nothing waiting or running (raise_delivery_queue_floor), holding the same row lock, and
-- never past yesterday, so that deliveries of today, which writers add without taking the lock,
-- can never be left below it: that would need a writer's transaction to stay open from one day
-- until after the next has begun.
CREATE TABLE delivery_queue_floor (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    day integer NOT NULL
);
-- Day 0 (the legacy partition) while it holds work; yesterday otherwise.
INSERT INTO delivery_queue_floor (day)
SELECT CASE WHEN EXISTS (SELECT 1 FROM deliveries WHERE state IN ('available', 'retrying', 'running')) THEN 0
            ELSE delivery_day(now()) - 1 END;

-- Moving the floor: lower_delivery_queue_floor (Sources/NotifiableStore/Queue/SQL/) and
-- raise_delivery_queue_floor (Sources/NotifiableStore/Retention/SQL/).

-- The claim on the partitioned table: claim_deliveries and ready_apps
-- (Sources/NotifiableStore/Queue/SQL/).
