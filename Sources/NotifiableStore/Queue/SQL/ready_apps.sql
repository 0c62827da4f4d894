-- ready_apps(after, up_to, how_many, first_day, last_day): up to how_many apps with a delivery
-- ready now, in id order, after `after` and up to `up_to`, each with whether it has `high`
-- (priority 10) and `normal` (5) ones ready, reading only the days from first_day to last_day.
-- claim_deliveries uses it to choose the apps a claim serves, from the queue's floor to today;
-- QueueAdminStore to find the oldest ready delivery's age without a scan of every waiting one.
--
-- Each app with waiting deliveries costs one probe of deliveries_waiting_idx to find (PostgreSQL
-- 15 has no skip scan of its own) and one or two to see whether any is ready now: retries backing
-- off and sends scheduled for later wait in the same index, and an app holding only those must
-- not take a place in the claim. The recursion is seeded with `after` itself, neither high nor
-- normal, so that every app found comes from the recursive step and is probed in one place.
--
-- By hand: SELECT * FROM ready_apps(0, 9223372036854775807, 100, 0, delivery_day(now()));

CREATE OR REPLACE FUNCTION ready_apps(after bigint, up_to bigint, how_many integer, first_day integer, last_day integer)
RETURNS TABLE (app_id bigint, high boolean, normal boolean)
LANGUAGE plpgsql STABLE
-- Planned on every call, with its days as constants: a generic plan opens every day's
-- partition on every call and doubled the claim's time.
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
