-- What a current app shows needs two facts of a device at send time: the operating system of a
-- device registered through FCM (an iPhone on Firebase needs the message's apns block) and the APNs
-- host its token belongs to (a debug build's token is the sandbox's). Both are columns of devices,
-- and the claim returns them with the delivery's badge, and a delivery's own token (a Live
-- Activity's) in place of its device's; otherwise claim_deliveries is the function of 0019.
-- Dropped and created again in this one transaction because its result gains two columns; the
-- previous release names the columns it reads, so it reads the new function as it read the old.
--
-- Badges that count: a device keeps the badge the service last sent it (the app resets it to 0 when
-- it opens), and a delivery the badge it carries, fixed at fan-out so that a retry sends the same
-- number.
--
-- Apps get a default Android notification channel, and APNs settings a second host for the
-- environment the app's settings do not name (tests and private gateways; Apple's own otherwise).

-- The checks are NOT VALID: every existing row is NULL there, and validating would scan every
-- device under the ALTER TABLE lock. New and changed rows are checked all the same.
ALTER TABLE devices
    ADD COLUMN platform text,
    ADD COLUMN apns_environment text,
    ADD CONSTRAINT devices_platform_check CHECK (platform IN ('ios', 'android')) NOT VALID,
    ADD CONSTRAINT devices_apns_environment_check CHECK (apns_environment IN ('sandbox', 'production')) NOT VALID;

-- The service keeps it within 0…99999 (LEAST at fan-out, the API's range on update).
ALTER TABLE devices ADD COLUMN badge integer NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN badge integer;
-- A push to a Live Activity goes to the activity's token, not the device's: the delivery says so.
ALTER TABLE deliveries ADD COLUMN push_token text;

ALTER TABLE apps ADD COLUMN default_android_channel_id text CHECK (length(default_android_channel_id) BETWEEN 1 AND 255);

ALTER TABLE apns_settings ADD COLUMN sandbox_endpoint text;

-- By hand: SELECT * FROM claim_deliveries(10, 60);
DROP FUNCTION claim_deliveries(integer, double precision);
CREATE FUNCTION claim_deliveries(batch_size integer, lease_seconds double precision)
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
        RETURNING q.id, q.state, q.notification_id, q.app_id, q.device_id, q.attempts, d.provider, COALESCE(q.push_token, d.token),
                  d.language, d.country, COALESCE(q.content, n.content)::text, COALESCE(q.expires_at, n.expires_at),
                  a.delivery_mode = 'sandbox', q.kind, d.platform, d.apns_environment, q.badge;

        -- The apps that took their whole share may have more; the others have no more ready now.
        serving := ARRAY(SELECT s.app_id FROM unnest(serving, wants) WITH ORDINALITY AS s(app_id, wants, ord)
                         WHERE s.wants = 0 ORDER BY s.ord);
    END LOOP;
END
$$;
