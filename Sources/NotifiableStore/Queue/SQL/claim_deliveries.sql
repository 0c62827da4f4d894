-- claim_deliveries(batch_size, lease_seconds): a worker's claim (DeliveryQueueStore.claim). Takes
-- up to batch_size ready deliveries, shared among the apps that have any, marks them running with
-- a lease of lease_seconds, and returns what sending needs: the device's platform and APNs
-- environment, the delivery's badge, and a delivery's own token (a Live Activity's) in place of its
-- device's. A ready delivery whose notification was cancelled, or whose device was unregistered,
-- invalidated or merged away, is settled as cancelled instead and returned as such.
--
-- Fair across apps. It serves at most batch_size apps with deliveries ready (ready_apps), starting
-- after the app where the last claim stopped (deliveries_claim_position) and wrapping round to the
-- first; one look at the queue finds them all when they fit in one claim (nearly always), and the
-- list is only turned to start after the position. When there are more such apps than a batch has
-- room for, successive claims, by any workers, serve the next ones in turn; when they all fit,
-- each claim starts one app further, so the one-more of uneven shares goes round too. The position
-- moves at once, not at commit (setval), so that claims running meanwhile serve the next apps.
--
-- Each round offers every app served an equal share of what is left of the batch. Within an app,
-- a tenth of its share (rounded up) goes to `normal` (priority 5) first, then the rest to `high`
-- (10), then what `high` left to `normal`. The apps that took their whole share are offered what
-- the others left in the next round. So a broadcast alone still fills whole batches, and an app
-- with one push gets it into the very next claim.
--
-- Sync signals and Live Activity events (every kind but 'push') of one device and notification go
-- one at a time, in order, so the last to reach the gateway is the newest: one waits while an older
-- one is running, and one that a newer one supersedes is cancelled. A notification has deliveries
-- of one of those kinds only, so the checks need not name it. They run once after the picking, on
-- the ones picked: planned in every step they tripled its planning, and most claims pick none.
--
-- Its plan must never sort the whole queue. Right after a fan-out the table's statistics still
-- describe it as it was before the broadcast; the planner then believes few rows are ready and
-- sorts every ready delivery by run_at, to disk, on every claim (45 ms for a batch of 500 instead
-- of 9 ms on a 100,000-device broadcast). So sorting is priced out (enable_sort = off), and each
-- (app, priority) is read as an index range of deliveries_waiting_idx in run_at order. Each call
-- is planned for its own batch (plan_cache_mode = force_custom_plan). JIT is off: the planner
-- cannot know a LIMIT taken from an array, prices the scan as if it read the whole index, and
-- compiling the plan took 22 ms of a 56 ms claim.
--
-- It reads only the days from the queue's floor (delivery_queue_floor) to today, named as
-- constants so that the planner leaves the other days' partitions out before planning (each day
-- read costs every statement its planning). Its update names the days of the deliveries it picked,
-- for the same reason, and their ids as an array besides the join: a day's partition has no
-- statistics until autovacuum first analyzes it, and without the array the planner read all of a
-- fresh 200,000-row day to join 500 rows.
--
-- By hand: SELECT * FROM claim_deliveries(10, 60);

CREATE OR REPLACE FUNCTION claim_deliveries(batch_size integer, lease_seconds double precision)
RETURNS TABLE (id bigint, state text, notification_id bigint, app_id bigint, device_id bigint, attempts integer,
               provider text, token text, language text, country text, content text, expires_at timestamptz,
               sandbox boolean, kind text, platform text, apns_environment text, badge integer)
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
    -- Every app with deliveries ready, when they fit in one claim (nearly always): then the list
    -- is only turned to start after the position, without a second look at the queue.
    SELECT COALESCE(array_agg(r.app_id ORDER BY r.app_id > after DESC, r.app_id), '{}'),
           COALESCE(bool_or(r.high), false), COALESCE(bool_or(r.normal), false)
    INTO serving, any_high, any_normal
    FROM ready_apps(0, 9223372036854775807, batch_size, first_day, last_day) AS r;
    IF cardinality(serving) = batch_size THEN
        -- More apps than a claim serves: the ones after the position, then from the first.
        SELECT COALESCE(array_agg(r.app_id ORDER BY r.app_id), '{}'), COALESCE(bool_or(r.high), false), COALESCE(bool_or(r.normal), false)
        INTO serving, any_high, any_normal
        FROM ready_apps(after, 9223372036854775807, batch_size, first_day, last_day) AS r;
        IF cardinality(serving) < batch_size THEN
            SELECT serving || COALESCE(array_agg(r.app_id ORDER BY r.app_id), '{}'),
                   any_high OR COALESCE(bool_or(r.high), false), any_normal OR COALESCE(bool_or(r.normal), false)
            INTO serving, any_high, any_normal
            FROM ready_apps(0, after, batch_size - cardinality(serving), first_day, last_day) AS r;
        END IF;
    END IF;
    -- Moved on at once, not at commit, so that claims running meanwhile serve the next apps: past
    -- the last app served when not all were, else one app further than this claim started.
    IF cardinality(serving) = batch_size AND serving[cardinality(serving)] > after THEN
        PERFORM setval('deliveries_claim_position', serving[cardinality(serving)]);
    ELSIF cardinality(serving) > 0 THEN
        PERFORM setval('deliveries_claim_position', serving[1]);
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
        -- An array test, not a query: PL/pgSQL evaluates it without planning anything.
        IF NOT ('push' = ALL (kinds)) THEN
            SELECT array_agg(p.id ORDER BY p.ord), array_agg(p.kind ORDER BY p.ord), array_agg(p.superseded ORDER BY p.ord)
            INTO picked, kinds, superseded
            FROM (
                SELECT ready.ord, ready.id, ready.kind,
                       ready.kind <> 'push' AND EXISTS (
                           SELECT 1 FROM deliveries newer
                           WHERE newer.device_id = q.device_id AND newer.notification_id = q.notification_id
                             AND newer.kind <> 'push' AND newer.id > q.id AND newer.day >= first_day) AS superseded
                FROM unnest(picked, kinds) WITH ORDINALITY AS ready(id, kind, ord)
                JOIN deliveries q ON q.id = ready.id AND q.day = ANY (days)
                WHERE NOT (ready.kind <> 'push' AND EXISTS (
                          SELECT 1 FROM deliveries older
                          WHERE older.device_id = q.device_id AND older.notification_id = q.notification_id
                            AND older.kind <> 'push' AND older.state = 'running' AND older.day >= first_day))
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
                          WHEN q.kind = 'activity' THEN 'device gone or a newer event of the activity supersedes this one'
                          ELSE 'notification cancelled or device gone before sending' END,
            claimed_at = CASE WHEN target.gone THEN q.claimed_at ELSE clock_timestamp() END,
            updated_at = now()
        FROM unnest(picked, kinds, superseded) AS ready(id, kind, superseded), devices d, notifications n, apps a,
             LATERAL (SELECT (ready.kind = 'push' AND n.state = 'cancelled') OR d.unregistered_at IS NOT NULL
                             OR d.invalidated_at IS NOT NULL OR d.merged_into IS NOT NULL OR ready.superseded AS gone) AS target
        WHERE q.id = ready.id AND q.id = ANY (picked) AND q.day = ANY (days) AND d.id = q.device_id AND n.id = q.notification_id AND a.id = q.app_id
        RETURNING q.id, q.state, q.notification_id, q.app_id, q.device_id, q.attempts, d.provider, COALESCE(q.push_token, d.token),
                  d.language, d.country, COALESCE(q.content, n.content)::text, COALESCE(q.expires_at, n.expires_at),
                  a.delivery_mode = 'sandbox', q.kind, d.platform, d.apns_environment, q.badge;

        -- The apps that took their whole share may have more; the others have no more ready now.
        serving := ARRAY(SELECT s.app_id FROM unnest(serving, wants) WITH ORDINALITY AS s(app_id, wants, ord)
                         WHERE s.wants = 0 ORDER BY s.ord);
    END LOOP;
END
$$;
