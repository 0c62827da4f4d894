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

-- Up to how_many apps with a delivery ready now, in id order, after `after` and up to `up_to`,
-- each with whether it has `high` and `normal` ones ready.
-- Each app with waiting deliveries costs one probe of deliveries_waiting_idx to find (PostgreSQL
-- 15 has no skip scan of its own) and one or two to see whether any is ready now: retries backing
-- off and sends scheduled for later wait in the same index, and an app holding only those must
-- not take a place in the claim.
--
-- By hand: SELECT * FROM ready_apps(0, 9223372036854775807, 100);
CREATE FUNCTION ready_apps(after bigint, up_to bigint, how_many integer)
RETURNS TABLE (app_id bigint, high boolean, normal boolean)
LANGUAGE plpgsql STABLE
-- Planned once per session, not on every claim (the claim plans its own statements afresh).
SET plan_cache_mode = auto
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    -- Seeded with `after` itself, neither high nor normal, so that every app found comes from the
    -- recursive step and is probed in one place.
    WITH RECURSIVE candidate (app_id, high, normal, found) AS (
        SELECT after, false, false, 0
        UNION ALL
        SELECT next.app_id, ready.high, ready.normal, candidate.found + (ready.high OR ready.normal)::integer
        FROM candidate,
             LATERAL (SELECT q.app_id FROM deliveries q
                      WHERE q.state IN ('available', 'retrying') AND q.app_id > candidate.app_id AND q.app_id <= up_to
                      ORDER BY q.app_id LIMIT 1) AS next,
             LATERAL (SELECT EXISTS (SELECT 1 FROM deliveries q
                                     WHERE q.app_id = next.app_id AND q.priority = 10
                                       AND q.state IN ('available', 'retrying') AND q.run_at <= now()) AS high,
                             EXISTS (SELECT 1 FROM deliveries q
                                     WHERE q.app_id = next.app_id AND q.priority = 5
                                       AND q.state IN ('available', 'retrying') AND q.run_at <= now()) AS normal) AS ready
        WHERE candidate.found < how_many
    )
    SELECT candidate.app_id, candidate.high, candidate.normal FROM candidate
    WHERE candidate.high OR candidate.normal
    ORDER BY candidate.app_id;
END
$$;

-- A worker's claim: up to batch_size ready deliveries, shared among the apps that have any.
--
-- It serves at most batch_size apps with deliveries ready (ready_apps), starting after the app
-- where the last claim stopped (deliveries_claim_position) and wrapping round to the first. When
-- there are more such apps than a batch has room for, successive claims, by any workers, serve the
-- next ones in turn; when they all fit, each claim starts one app further, so the one-more of
-- uneven shares goes round too.
--
-- Each round offers every app served an equal share of what is left of the batch. Within an app,
-- a tenth of its share (rounded up) goes to `normal` first, then the rest to `high`, then what
-- `high` left to `normal`. The apps that took their whole share are offered what the others left
-- in the next round. So a broadcast alone still fills whole batches, and an app with one push
-- gets it into the very next claim.
--
-- Each (app, priority) is read as an index range, app_id = $1 AND priority = $2 AND run_at <=
-- now() in run_at order, so ready rows are found without reading any that wait for a later time.
-- Sorting is priced out (enable_sort) for the reason 0010 gives: fresh statistics lag a
-- broadcast, and a plan that sorts every ready row on every claim cost five times the claim. JIT
-- is off: the planner cannot know a LIMIT taken from an array, prices the scan as if it read the
-- whole index, and compiling the plan took 22 ms of a 56 ms claim.
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
    taken_superseded boolean[];
    remaining integer := batch_size;
    left_in_round integer;
    after bigint;
    any_high boolean;
    any_normal boolean;
BEGIN
    IF batch_size <= 0 THEN
        RETURN;
    END IF;
    SELECT last_value INTO after FROM deliveries_claim_position;
    SELECT COALESCE(array_agg(r.app_id ORDER BY r.app_id), '{}'), COALESCE(bool_or(r.high), false), COALESCE(bool_or(r.normal), false)
    INTO serving, any_high, any_normal
    FROM ready_apps(after, 9223372036854775807, batch_size) AS r;
    -- Moved on at once, not at commit, so that claims running meanwhile serve the next apps.
    IF cardinality(serving) = batch_size THEN
        PERFORM setval('deliveries_claim_position', serving[cardinality(serving)]);
    ELSE
        SELECT serving || COALESCE(array_agg(r.app_id ORDER BY r.app_id), '{}'),
               any_high OR COALESCE(bool_or(r.high), false), any_normal OR COALESCE(bool_or(r.normal), false)
        INTO serving, any_high, any_normal
        FROM ready_apps(0, after, batch_size - cardinality(serving)) AS r;
        IF cardinality(serving) > 0 THEN
            PERFORM setval('deliveries_claim_position', serving[1]);
        END IF;
    END IF;

    WHILE remaining > 0 AND cardinality(serving) > 0 LOOP
        serving := serving[:remaining];
        -- Equal shares that add up to what is left: the first (remaining % apps) take one more.
        wants := ARRAY(SELECT remaining / cardinality(serving) + CASE WHEN i <= remaining % cardinality(serving) THEN 1 ELSE 0 END
                       FROM generate_series(1, cardinality(serving)) AS i ORDER BY i);
        picked := '{}';
        kinds := '{}';
        superseded := '{}';
        left_in_round := remaining;
        FOR step IN 1..3 LOOP
            level := (ARRAY[5, 10, 5]::smallint[])[step];
            -- Each step is a statement planned for its own limits: skipped when it cannot take anything.
            CONTINUE WHEN left_in_round = 0 OR (level = 10 AND NOT any_high) OR (level = 5 AND NOT any_normal);
            limits := CASE WHEN step = 1 THEN ARRAY(SELECT ceil(w / 10.0)::integer FROM unnest(wants) WITH ORDINALITY AS s(w, ord) ORDER BY ord)
                           ELSE wants END;
            WITH taken AS (
                SELECT s.ord, r.id, r.kind, r.superseded
                FROM unnest(serving, limits) WITH ORDINALITY AS s(app_id, wants, ord)
                CROSS JOIN LATERAL (
                    SELECT q.id, q.kind,
                           -- A sync signal that a newer one for the same device and notification supersedes.
                           q.kind = 'sync' AND EXISTS (
                               SELECT 1 FROM deliveries newer
                               WHERE newer.device_id = q.device_id AND newer.notification_id = q.notification_id
                                 AND newer.kind = 'sync' AND newer.id > q.id) AS superseded
                    FROM deliveries q
                    WHERE q.app_id = s.app_id AND q.priority = level AND q.state IN ('available', 'retrying')
                      AND q.run_at <= now()
                      -- The rows the first step locked are still waiting, and a transaction's own
                      -- locks do not make SKIP LOCKED skip them.
                      AND (step < 3 OR q.id <> ALL (picked))
                      -- A device's sync signals for a notification go one at a time, in order, so the
                      -- last to reach the gateway is the newest.
                      AND NOT (q.kind = 'sync' AND EXISTS (
                          SELECT 1 FROM deliveries older
                          WHERE older.device_id = q.device_id AND older.notification_id = q.notification_id
                            AND older.kind = 'sync' AND older.state = 'running'))
                    ORDER BY q.run_at
                    LIMIT s.wants
                    FOR UPDATE SKIP LOCKED
                ) AS r
            ),
            per_app AS (SELECT taken.ord, count(*) AS n FROM taken GROUP BY taken.ord)
            SELECT (SELECT array_agg(taken.id ORDER BY taken.ord, taken.id) FROM taken),
                   (SELECT array_agg(taken.kind ORDER BY taken.ord, taken.id) FROM taken),
                   (SELECT array_agg(taken.superseded ORDER BY taken.ord, taken.id) FROM taken),
                   ARRAY(SELECT s.wants - COALESCE(per_app.n, 0)
                         FROM unnest(wants) WITH ORDINALITY AS s(wants, ord) LEFT JOIN per_app ON per_app.ord = s.ord
                         ORDER BY s.ord)
            INTO taken_ids, taken_kinds, taken_superseded, wants;
            picked := picked || COALESCE(taken_ids, '{}');
            left_in_round := left_in_round - cardinality(COALESCE(taken_ids, '{}'));
            kinds := kinds || COALESCE(taken_kinds, '{}');
            superseded := superseded || COALESCE(taken_superseded, '{}');
        END LOOP;
        EXIT WHEN cardinality(picked) = 0;

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
        WHERE q.id = ready.id AND d.id = q.device_id AND n.id = q.notification_id AND a.id = q.app_id
        RETURNING q.id, q.state, q.notification_id, q.app_id, q.device_id, q.attempts, d.provider, d.token,
                  d.language, d.country, COALESCE(q.content, n.content)::text, COALESCE(q.expires_at, n.expires_at),
                  a.delivery_mode = 'sandbox', q.kind;

        remaining := remaining - cardinality(picked);
        -- The apps that took their whole share may have more; the others have no more ready now.
        serving := ARRAY(SELECT s.app_id FROM unnest(serving, wants) WITH ORDINALITY AS s(app_id, wants, ord)
                         WHERE s.wants = 0 ORDER BY s.ord);
    END LOOP;
END
$$;
