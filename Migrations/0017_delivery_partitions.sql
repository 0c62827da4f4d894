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
DROP TRIGGER deliveries_counted_insert ON deliveries_legacy;
DROP TRIGGER deliveries_counted_update ON deliveries_legacy;
DROP TRIGGER deliveries_counted_delete ON deliveries_legacy;
DROP TRIGGER deliveries_counted_truncate ON deliveries_legacy;
DROP TRIGGER deliveries_webhook_events ON deliveries_legacy;
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

CREATE TRIGGER deliveries_counted_insert AFTER INSERT ON deliveries
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION deliveries_count_changes();
CREATE TRIGGER deliveries_counted_update AFTER UPDATE ON deliveries
    REFERENCING OLD TABLE AS previous NEW TABLE AS updated
    FOR EACH STATEMENT EXECUTE FUNCTION deliveries_count_changes();
CREATE TRIGGER deliveries_counted_delete AFTER DELETE ON deliveries
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION deliveries_count_changes();
CREATE TRIGGER deliveries_counted_truncate AFTER TRUNCATE ON deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION deliveries_truncated();
CREATE TRIGGER deliveries_webhook_events AFTER UPDATE ON deliveries
    REFERENCING OLD TABLE AS old_deliveries NEW TABLE AS new_deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION record_delivery_webhook_events();

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

-- Every partition of deliveries with the days it holds ([first_day, end_day)); the legacy
-- partition's first day is null (MINVALUE).
--
-- By hand: SELECT * FROM delivery_partitions();
CREATE FUNCTION delivery_partitions()
RETURNS TABLE (name text, first_day integer, end_day integer)
LANGUAGE sql STABLE AS $$
    SELECT c.relname::text,
           (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \((-?\d+)\)'))[1]::integer,
           (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \((-?\d+)\)'))[1]::integer
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'deliveries'::regclass AND NOT i.inhdetachpending
    ORDER BY 3
$$;

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

CREATE FUNCTION lower_delivery_queue_floor(waiting_day integer) RETURNS void
LANGUAGE sql VOLATILE AS $$
    UPDATE delivery_queue_floor SET day = LEAST(day, waiting_day)
    WHERE waiting_day < delivery_day(now())
$$;

CREATE FUNCTION raise_delivery_queue_floor() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    cap integer := delivery_day(now()) - 1;
    floor_day integer;
    partition record;
BEGIN
    SELECT day INTO floor_day FROM delivery_queue_floor FOR UPDATE;
    floor_day := LEAST(floor_day, cap);
    FOR partition IN SELECT * FROM delivery_partitions() p WHERE p.end_day > floor_day ORDER BY p.end_day LOOP
        IF partition.end_day > cap
           OR EXISTS (SELECT 1 FROM deliveries q
                      WHERE q.day >= floor_day AND q.day < partition.end_day AND q.state IN ('available', 'retrying'))
           OR EXISTS (SELECT 1 FROM deliveries q
                      WHERE q.day >= floor_day AND q.day < partition.end_day AND q.state = 'running') THEN
            -- Nothing waits before this partition's first day (the days between have no partition).
            floor_day := GREATEST(floor_day, LEAST(COALESCE(partition.first_day, floor_day), cap));
            UPDATE delivery_queue_floor SET day = floor_day WHERE day < floor_day;
            RETURN (SELECT day FROM delivery_queue_floor);
        END IF;
        floor_day := partition.end_day;
    END LOOP;
    UPDATE delivery_queue_floor SET day = cap WHERE day < cap;
    RETURN (SELECT day FROM delivery_queue_floor);
END
$$;

-- ready_apps of 0016, reading only the days from first_day to last_day.
--
-- By hand: SELECT * FROM ready_apps(0, 9223372036854775807, 100, 0, delivery_day(now()));
DROP FUNCTION ready_apps(bigint, bigint, integer);
CREATE FUNCTION ready_apps(after bigint, up_to bigint, how_many integer, first_day integer, last_day integer)
RETURNS TABLE (app_id bigint, high boolean, normal boolean)
LANGUAGE plpgsql STABLE
-- Planned on every call, with its days as constants: a generic plan, as 0016 let it have once
-- per session, now opens every day's partition on every call and doubled the claim's time.
SET plan_cache_mode = force_custom_plan
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH RECURSIVE candidate (app_id, high, normal, found) AS (
        SELECT after, false, false, 0
        UNION ALL
        SELECT next.app_id, ready.high, ready.normal, candidate.found + (ready.high OR ready.normal)::integer
        FROM candidate,
             LATERAL (SELECT q.app_id FROM deliveries q
                      WHERE q.state IN ('available', 'retrying') AND q.day BETWEEN first_day AND last_day
                        AND q.app_id > candidate.app_id AND q.app_id <= up_to
                      ORDER BY q.app_id LIMIT 1) AS next,
             LATERAL (SELECT EXISTS (SELECT 1 FROM deliveries q
                                     WHERE q.app_id = next.app_id AND q.priority = 10 AND q.day BETWEEN first_day AND last_day
                                       AND q.state IN ('available', 'retrying') AND q.run_at <= now()) AS high,
                             EXISTS (SELECT 1 FROM deliveries q
                                     WHERE q.app_id = next.app_id AND q.priority = 5 AND q.day BETWEEN first_day AND last_day
                                       AND q.state IN ('available', 'retrying') AND q.run_at <= now()) AS normal) AS ready
        WHERE candidate.found < how_many
    )
    SELECT candidate.app_id, candidate.high, candidate.normal FROM candidate
    WHERE candidate.high OR candidate.normal
    ORDER BY candidate.app_id;
END
$$;

-- The claim of 0016 on the partitioned table. What changed:
-- - It reads only the days from the queue's floor to today, named as constants so that the
--   planner leaves the other days out before planning: each day read costs every statement of
--   the claim its planning (0.25 ms a day for one step, against 0.2 ms for the whole step before).
-- - Its update names the days of the deliveries it picked, for the same reason (0.2 ms against
--   17 ms with 40 days, when the days are left to be pruned at run time), and their ids as an
--   array besides the join: a day's partition has no statistics until autovacuum first analyzes
--   it, and without the array the planner read all of a fresh 200,000-row day to join 500 rows
--   (400 ms a claim instead of 12).
-- - The checks that hold a sync signal back while an older one for the same device and
--   notification is in flight, or cancel it when a newer one supersedes it, run once after the
--   picking, on the sync signals picked, instead of inside every step: planned in every step
--   they tripled its planning, and most claims pick none. A held-back signal stays waiting.
--
-- By hand: SELECT * FROM claim_deliveries(10, 60);
CREATE OR REPLACE FUNCTION claim_deliveries(batch_size integer, lease_seconds double precision)
RETURNS TABLE (id bigint, state text, notification_id bigint, app_id bigint, device_id bigint, attempts integer,
               provider text, token text, language text, country text, content text, expires_at timestamptz,
               sandbox boolean, kind text)
LANGUAGE plpgsql
SET enable_sort = off
SET plan_cache_mode = force_custom_plan
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    serving bigint[];       -- the apps this round serves, in order
    wants integer[];        -- how many more each of them may take this round
    limits integer[];       -- how many each may take in this step
    step integer;
    level smallint;
    picked bigint[];
    kinds text[];
    superseded boolean[];
    taken_ids bigint[];
    taken_kinds text[];
    days integer[];         -- the days of the picked deliveries
    remaining integer := batch_size;
    left_in_round integer;
    after bigint;
    first_day integer;
    last_day integer := delivery_day(now());
    any_high boolean;
    any_normal boolean;
BEGIN
    IF batch_size <= 0 THEN
        RETURN;
    END IF;
    SELECT day INTO first_day FROM delivery_queue_floor;
    SELECT last_value INTO after FROM deliveries_claim_position;
    SELECT COALESCE(array_agg(r.app_id ORDER BY r.app_id), '{}'), COALESCE(bool_or(r.high), false), COALESCE(bool_or(r.normal), false)
    INTO serving, any_high, any_normal
    FROM ready_apps(after, 9223372036854775807, batch_size, first_day, last_day) AS r;
    -- Moved on at once, not at commit, so that claims running meanwhile serve the next apps.
    IF cardinality(serving) = batch_size THEN
        PERFORM setval('deliveries_claim_position', serving[cardinality(serving)]);
    ELSE
        SELECT serving || COALESCE(array_agg(r.app_id ORDER BY r.app_id), '{}'),
               any_high OR COALESCE(bool_or(r.high), false), any_normal OR COALESCE(bool_or(r.normal), false)
        INTO serving, any_high, any_normal
        FROM ready_apps(0, after, batch_size - cardinality(serving), first_day, last_day) AS r;
        IF cardinality(serving) > 0 THEN
            PERFORM setval('deliveries_claim_position', serving[1]);
        END IF;
    END IF;

    WHILE remaining > 0 AND cardinality(serving) > 0 LOOP
        serving := serving[:remaining];
        wants := ARRAY(SELECT remaining / cardinality(serving) + CASE WHEN i <= remaining % cardinality(serving) THEN 1 ELSE 0 END
                       FROM generate_series(1, cardinality(serving)) AS i ORDER BY i);
        picked := '{}';
        kinds := '{}';
        left_in_round := remaining;
        FOR step IN 1..3 LOOP
            level := (ARRAY[5, 10, 5]::smallint[])[step];
            CONTINUE WHEN left_in_round = 0 OR (level = 10 AND NOT any_high) OR (level = 5 AND NOT any_normal);
            limits := CASE WHEN step = 1 THEN ARRAY(SELECT ceil(w / 10.0)::integer FROM unnest(wants) WITH ORDINALITY AS s(w, ord) ORDER BY ord)
                           ELSE wants END;
            WITH taken AS (
                SELECT s.ord, r.id, r.kind
                FROM unnest(serving, limits) WITH ORDINALITY AS s(app_id, wants, ord)
                CROSS JOIN LATERAL (
                    SELECT q.id, q.kind
                    FROM deliveries q
                    WHERE q.app_id = s.app_id AND q.priority = level AND q.state IN ('available', 'retrying')
                      AND q.run_at <= now() AND q.day BETWEEN first_day AND last_day
                      AND (step < 3 OR q.id <> ALL (picked))
                    ORDER BY q.run_at
                    LIMIT s.wants
                    FOR UPDATE SKIP LOCKED
                ) AS r
            ),
            per_app AS (SELECT taken.ord, count(*) AS n FROM taken GROUP BY taken.ord)
            SELECT (SELECT array_agg(taken.id ORDER BY taken.ord, taken.id) FROM taken),
                   (SELECT array_agg(taken.kind ORDER BY taken.ord, taken.id) FROM taken),
                   ARRAY(SELECT s.wants - COALESCE(per_app.n, 0)
                         FROM unnest(wants) WITH ORDINALITY AS s(wants, ord) LEFT JOIN per_app ON per_app.ord = s.ord
                         ORDER BY s.ord)
            INTO taken_ids, taken_kinds, wants;
            picked := picked || COALESCE(taken_ids, '{}');
            left_in_round := left_in_round - cardinality(COALESCE(taken_ids, '{}'));
            kinds := kinds || COALESCE(taken_kinds, '{}');
        END LOOP;
        EXIT WHEN cardinality(picked) = 0;
        remaining := remaining - cardinality(picked);

        days := ARRAY(SELECT DISTINCT delivery_day_of(p) FROM unnest(picked) AS p);
        superseded := array_fill(false, ARRAY[cardinality(picked)]);
        IF 'sync' = ANY (kinds) THEN
            SELECT array_agg(p.id ORDER BY p.ord), array_agg(p.kind ORDER BY p.ord), array_agg(p.superseded ORDER BY p.ord)
            INTO picked, kinds, superseded
            FROM (
                SELECT ready.ord, ready.id, ready.kind,
                       ready.kind = 'sync' AND EXISTS (
                           SELECT 1 FROM deliveries newer
                           WHERE newer.device_id = q.device_id AND newer.notification_id = q.notification_id
                             AND newer.kind = 'sync' AND newer.id > q.id AND newer.day >= first_day) AS superseded
                FROM unnest(picked, kinds) WITH ORDINALITY AS ready(id, kind, ord)
                JOIN deliveries q ON q.id = ready.id AND q.day = ANY (days)
                WHERE NOT (ready.kind = 'sync' AND EXISTS (
                          SELECT 1 FROM deliveries older
                          WHERE older.device_id = q.device_id AND older.notification_id = q.notification_id
                            AND older.kind = 'sync' AND older.state = 'running' AND older.day >= first_day))
            ) AS p;
            -- Only held-back signals: the next claim tries again.
            EXIT WHEN picked IS NULL;
        END IF;
        RETURN QUERY
        UPDATE deliveries q SET
            state = CASE WHEN target.gone THEN 'cancelled' ELSE 'running' END,
            attempts = CASE WHEN target.gone THEN q.attempts ELSE q.attempts + 1 END,
            locked_until = CASE WHEN target.gone THEN NULL ELSE now() + make_interval(secs => lease_seconds) END,
            cancelled_at = CASE WHEN target.gone THEN now() ELSE q.cancelled_at END,
            reason = CASE WHEN NOT target.gone THEN q.reason
                          WHEN q.kind = 'sync' THEN 'device gone or a newer sync signal supersedes this one'
                          ELSE 'notification cancelled or device gone before sending' END,
            claimed_at = CASE WHEN target.gone THEN q.claimed_at ELSE clock_timestamp() END,
            updated_at = now()
        FROM unnest(picked, kinds, superseded) AS ready(id, kind, superseded), devices d, notifications n, apps a,
             LATERAL (SELECT (ready.kind = 'push' AND n.state = 'cancelled') OR d.unregistered_at IS NOT NULL
                             OR d.invalidated_at IS NOT NULL OR d.merged_into IS NOT NULL OR ready.superseded AS gone) AS target
        WHERE q.id = ready.id AND q.id = ANY (picked) AND q.day = ANY (days) AND d.id = q.device_id AND n.id = q.notification_id AND a.id = q.app_id
        RETURNING q.id, q.state, q.notification_id, q.app_id, q.device_id, q.attempts, d.provider, d.token,
                  d.language, d.country, COALESCE(q.content, n.content)::text, COALESCE(q.expires_at, n.expires_at),
                  a.delivery_mode = 'sandbox', q.kind;

        -- The apps that took their whole share may have more; the others have no more ready now.
        serving := ARRAY(SELECT s.app_id FROM unnest(serving, wants) WITH ORDINALITY AS s(app_id, wants, ord)
                         WHERE s.wants = 0 ORDER BY s.ord);
    END LOOP;
END
$$;
