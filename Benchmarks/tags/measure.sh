#!/usr/bin/env bash
# Tag storage benchmark (not a test). Loads DEVICES devices of one app with tags drawn as apps
# tag (a unique username tag each, one language of six with en on 50 %, plan:free on 50 %, two
# topics on 30 % and 20 %, beta on 1 %, group:staff on 0.1 %, group:vip on exactly 10 devices,
# one city of 1,000) into two designs side by side, and times the same expressions on both:
#   tags_array   devices.tags text[], GIN index on (app_id, tags) (btree_gin): Migration 0005
#   tags_table   device_tags (app_id, tag, device_id), primary key in that order
# Each design is a copy of the real devices table (Migrations 0001-0004) in a schema of its own;
# conditions are written as TagExpressionSQL writes them, tags as bind parameters.
#
# For each expression: the whole audience counted at once (lookup), the fan-out's keyset walk
# as it was (d.app_id = $1 AND d.id > cursor AND <condition> ORDER BY d.id LIMIT 1000, until a
# short batch) and as NotificationFanOut walks now (the same, below cursor + window; the window
# starts at 65,536 ids and doubles after a batch of less than half the limit). Times are
# medians of RUNS warm runs.
# Then EXPLAIN (ANALYZE, BUFFERS) of batches, and (NEIGHBOURS > 0) one app's rare tags in a
# database shared with a neighbour app whose devices carry the same tags, under GIN (tags) and
# GIN (app_id, tags).
#
#   Benchmarks/tags/measure.sh                  # 127.0.0.1:55434, database tagbench (PGHOST, PGPORT, PGDATABASE)
#   DEVICES=100000 RUNS=1 Benchmarks/tags/measure.sh
#   SKIP_LOAD=1 Benchmarks/tags/measure.sh      # measure again on the data loaded before
#   SKIP_PLANS=1 NEIGHBOURS=0 ...               # the table only
#
# The database is wiped (schemas public, tags_array, tags_table, tags_shared, bench). The load
# of 1,000,000 devices takes about a minute; the whole run about ten.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/postgres.sh
pg_ensure_installed

export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-55434} PGUSER=${PGUSER:-notifiable} PGDATABASE=${PGDATABASE:-tagbench}
DEVICES=${DEVICES:-1000000}
RUNS=${RUNS:-3}
NEIGHBOURS=${NEIGHBOURS:-$DEVICES}
psql() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

if [ -z "${SKIP_LOAD:-}" ]; then
  echo "==> Schema: Migrations 0001-0004, then the two designs"
  psql -c "DROP SCHEMA IF EXISTS public, tags_array, tags_table, tags_shared, bench CASCADE; CREATE SCHEMA public;"
  for migration in Migrations/000[1-4]_*.sql; do psql -1 -f "$migration"; done
  psql <<'SQL'
CREATE EXTENSION btree_gin;
CREATE SCHEMA tags_array;
CREATE TABLE tags_array.devices (LIKE public.devices INCLUDING ALL);
ALTER TABLE tags_array.devices ADD COLUMN tags text[] NOT NULL DEFAULT '{}';

CREATE SCHEMA tags_table;
CREATE TABLE tags_table.devices (LIKE public.devices INCLUDING ALL);
CREATE TABLE tags_table.device_tags (
    app_id     bigint NOT NULL,
    tag        text NOT NULL,
    device_id  bigint NOT NULL,
    PRIMARY KEY (app_id, tag, device_id)
);
SQL

  echo "==> Loading $DEVICES devices"
  psql -v devices="$DEVICES" <<'SQL'
SET maintenance_work_mem = '512MB';
INSERT INTO apps (name) VALUES ('tagbench');
SELECT setseed(0.42);
INSERT INTO tags_array.devices (id, app_id, provider, token, user_alias, language, tags)
SELECT n, (SELECT min(id) FROM apps), CASE WHEN n % 4 = 0 THEN 'fcm' ELSE 'apns' END,
       lpad(to_hex(n), 64, '0'), 'user-' || n, lang,
       array_remove(ARRAY[
           'username:user-' || n,
           'lang:' || lang,
           CASE WHEN r1 < 0.5 THEN 'plan:free' END,
           CASE WHEN r2 < 0.3 THEN 'topic:sports' END,
           CASE WHEN r3 < 0.2 THEN 'topic:news' END,
           CASE WHEN r4 < 0.01 THEN 'beta' END,
           CASE WHEN r5 < 0.001 THEN 'group:staff' END,
           -- exactly 10 devices, spread over the id range
           CASE WHEN (n * 7919) % :devices < 10 THEN 'group:vip' END,
           'city:' || floor(r6 * 1000)::int
       ], NULL)
FROM (SELECT n, random() AS r0, random() AS r1, random() AS r2, random() AS r3, random() AS r4,
             random() AS r5, random() AS r6
      FROM generate_series(1, :devices::bigint) AS n) AS draws
CROSS JOIN LATERAL (SELECT CASE WHEN r0 < 0.5 THEN 'en' WHEN r0 < 0.6 THEN 'fr' WHEN r0 < 0.7 THEN 'de'
                                WHEN r0 < 0.8 THEN 'es' WHEN r0 < 0.9 THEN 'it' ELSE 'ja' END AS lang) AS l;
CREATE INDEX devices_app_tags_idx ON tags_array.devices USING gin (app_id, tags);

INSERT INTO tags_table.devices SELECT id, app_id, provider, token, name, user_alias, language, country,
    custom_properties, platform_properties, created_at, updated_at, registered_at, invalidated_at,
    invalidation_reason, unregistered_at, merged_into FROM tags_array.devices;
INSERT INTO tags_table.device_tags (app_id, tag, device_id)
SELECT app_id, unnest(tags), id FROM tags_array.devices ORDER BY 1, 2, 3;
CREATE INDEX device_tags_device_idx ON tags_table.device_tags (device_id);
SQL
  psql -c "VACUUM ANALYZE tags_array.devices" -c "VACUUM ANALYZE tags_table.devices" -c "VACUUM ANALYZE tags_table.device_tags"

  if [ "$NEIGHBOURS" -gt 0 ]; then
    echo "==> A shared database: the same devices, and $NEIGHBOURS of a neighbour app between them"
    psql -v neighbours="$NEIGHBOURS" <<'SQL'
SET maintenance_work_mem = '512MB';
CREATE SCHEMA tags_shared;
CREATE TABLE tags_shared.devices (LIKE tags_array.devices INCLUDING DEFAULTS);
INSERT INTO apps (name) VALUES ('neighbour');
-- The app's devices take the even ids, the neighbour's the odd ones; half the neighbour's
-- devices carry group:vip and all of them beta, tags that are rare in the app.
INSERT INTO tags_shared.devices SELECT id * 2, app_id, provider, token, name, user_alias, language, country,
    custom_properties, platform_properties, created_at, updated_at, registered_at, invalidated_at,
    invalidation_reason, unregistered_at, merged_into, tags FROM tags_array.devices;
INSERT INTO tags_shared.devices (id, app_id, provider, token, user_alias, tags)
SELECT n * 2 - 1, (SELECT max(id) FROM apps), 'apns', lpad(to_hex(n), 64, '0'), 'user-' || n,
       ARRAY['username:user-' || n, 'beta'] || CASE WHEN n % 2 = 0 THEN ARRAY['group:vip'] ELSE '{}' END
FROM generate_series(1, :neighbours::bigint) AS n;
ALTER TABLE tags_shared.devices ADD PRIMARY KEY (id);
CREATE INDEX devices_app_id_idx ON tags_shared.devices (app_id, id);
CREATE INDEX devices_tags_only_idx ON tags_shared.devices USING gin (tags);
CREATE INDEX devices_app_tags_idx ON tags_shared.devices USING gin (app_id, tags);
SQL
    psql -c "VACUUM ANALYZE tags_shared.devices"
  fi
fi

psql <<'SQL'
DROP SCHEMA IF EXISTS bench CASCADE;
CREATE SCHEMA bench;
-- The fan-out's batch: the app's live devices after a cursor (and up to a window's end, $6,
-- when windowed) that meet the condition, in id order. Tags are $3, $4, $5.
CREATE FUNCTION bench.batch_sql(condition text, windowed boolean) RETURNS text LANGUAGE sql AS $$
    SELECT 'SELECT d.id FROM devices d WHERE d.app_id = $1 AND d.id > $2'
        || CASE WHEN windowed THEN ' AND d.id <= $6' ELSE '' END
        || ' AND d.unregistered_at IS NULL AND d.invalidated_at IS NULL AND d.merged_into IS NULL'
        || ' AND ' || condition || ' ORDER BY d.id LIMIT 1000'
$$;
-- The app measured: the first (the 1,000,000 devices), unless bench.app says otherwise.
CREATE FUNCTION bench.app() RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT COALESCE(nullif(current_setting('bench.app', true), '')::bigint, (SELECT min(id) FROM apps))
$$;
-- Walks the whole audience batch by batch; windowed as NotificationFanOut walks.
CREATE FUNCTION bench.walk(condition text, windowed boolean, t1 text, t2 text, t3 text,
                           OUT batches int, OUT devices bigint, OUT ms numeric)
LANGUAGE plpgsql AS $$
DECLARE
    app bigint := bench.app();
    query text := 'SELECT max(id), count(*), (SELECT max(id) FROM devices WHERE app_id = $1) FROM ('
        || bench.batch_sql(condition, windowed) || ') AS batch';
    cursor_id bigint := 0;
    window_size bigint := 65536;
    last_id bigint;
    app_last_id bigint;
    n bigint;
    started timestamptz := clock_timestamp();
BEGIN
    batches := 0; devices := 0;
    LOOP
        EXECUTE query INTO last_id, n, app_last_id USING app, cursor_id, t1, t2, t3, cursor_id + window_size;
        batches := batches + 1;
        devices := devices + n;
        IF n = 1000 THEN
            cursor_id := last_id;
        ELSIF NOT windowed THEN
            EXIT;
        ELSE
            cursor_id := cursor_id + window_size;
            EXIT WHEN cursor_id >= app_last_id;
            IF n < 500 THEN
                window_size := window_size * 2;
            END IF;
        END IF;
    END LOOP;
    ms := round(extract(epoch FROM clock_timestamp() - started)::numeric * 1000, 1);
END
$$;
-- The whole audience at once.
CREATE FUNCTION bench.lookup(condition text, t1 text, t2 text, t3 text, OUT devices bigint, OUT ms numeric)
LANGUAGE plpgsql AS $$
DECLARE started timestamptz := clock_timestamp();
BEGIN
    EXECUTE 'SELECT count(*) FROM devices d WHERE d.app_id = $1 AND d.id > $2 AND d.unregistered_at IS NULL'
        || ' AND d.invalidated_at IS NULL AND d.merged_into IS NULL AND ' || condition
        INTO devices USING bench.app(), 0::bigint, t1, t2, t3;
    ms := round(extract(epoch FROM clock_timestamp() - started)::numeric * 1000, 1);
END
$$;
-- One batch's plan; window_end NULL for the unwindowed walk.
CREATE FUNCTION bench.explain(condition text, after bigint, window_end bigint, t1 text, t2 text, t3 text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) ' || bench.batch_sql(condition, window_end IS NOT NULL)
        USING bench.app(), after, t1, t2, t3, window_end;
END
$$;
SQL

# The conditions, as TagExpressionSQL writes them for tags_array, and through the join table.
has() { printf 'd.tags @> ARRAY[$%s::text]' "$1"; }
joined() { printf 'EXISTS (SELECT 1 FROM device_tags t WHERE t.app_id = d.app_id AND t.tag = $%s AND t.device_id = d.id)' "$1"; }
cases=""
add_case() { cases+="$1;$2;$3;$4;$5"$'\n'; }  # name; expression; tags; tags_array condition; tags_table condition
for tag in "rare tag (10 devices)|group:vip" "1 % tag|beta" "50 % tag|plan:free"; do
  add_case "${tag%%|*}" "${tag#*|}" "${tag#*|},," "$(has 3)" "$(joined 3)"
done
for pair in "1 %, 10 %|beta|lang:fr" "50 %, 50 %|plan:free|lang:en" "rare, 50 %|group:vip|lang:en"; do
  IFS='|' read -r label a b <<<"$pair"
  add_case "a && !b ($label)" "$a && !$b" "$a,$b," "($(has 3) AND NOT ($(has 4)))" "($(joined 3) AND NOT ($(joined 4)))"
done
for triple in "rare, 1 %, 50 %|group:vip|beta|lang:en" "30 %, 20 %, 10 %|topic:sports|topic:news|lang:fr" "1 %, 0.1 %, 50 %|beta|group:staff|plan:free"; do
  IFS='|' read -r label a b c <<<"$triple"
  add_case "(a || b) && c ($label)" "($a || $b) && $c" "$a,$b,$c" \
    "(($(has 3) OR $(has 4)) AND $(has 5))" "(($(joined 3) OR $(joined 4)) AND $(joined 5))"
done

quote() { printf "'%s'" "${1//\'/\'\'}"; }
nullable() { if [ -z "$1" ]; then printf 'NULL'; else quote "$1"; fi; }
middle=$((DEVICES / 2))

echo
echo "PostgreSQL $(psql -tAc 'SHOW server_version'), shared_buffers $(psql -tAc 'SHOW shared_buffers'), work_mem $(psql -tAc 'SHOW work_mem'); $(nproc) CPUs, $(free -g | awk '/Mem:/ {print $2}') GB"
echo "Sizes: $(psql -tAc "SELECT string_agg(format('%s %s', c, pg_size_pretty(pg_total_relation_size(c))), ', ') FROM unnest(ARRAY['tags_array.devices', 'tags_table.devices', 'tags_table.device_tags']::regclass[]) AS c")"
echo "       GIN (app_id, tags) $(psql -tAc "SELECT pg_size_pretty(pg_relation_size('tags_array.devices_app_tags_idx'))"), device_tags primary key $(psql -tAc "SELECT pg_size_pretty(pg_relation_size('tags_table.device_tags_pkey'))")"
echo
echo "ms: medians of $RUNS warm runs. keyset: the walk without a window; windowed: as NotificationFanOut walks."
printf '%-34s %-11s %9s %9s %8s %9s %8s %9s\n' "case" "design" "audience" "lookup" "batches" "keyset" "batches" "windowed"
while IFS=';' read -r name expression tags array_condition table_condition; do
  [ -n "$name" ] || continue
  IFS=',' read -r t1 t2 t3 <<<"$tags"
  args="$(nullable "$t1"), $(nullable "$t2"), $(nullable "$t3")"
  for design in tags_array tags_table; do
    condition=$array_condition
    [ "$design" = tags_table ] && condition=$table_condition
    c=$(quote "$condition")
    result=$(psql -tA -F' ' <<SQL | tail -n 1
SET search_path = $design, public;
SELECT * FROM bench.walk($c, true, $args);  -- warm-up
CREATE TEMP TABLE runs AS
    SELECT k.batches, k.ms, w.batches AS windows, w.ms AS windowed, l.ms AS lookup, l.devices AS audience,
           k.devices = l.devices AND w.devices = l.devices AS agree
    FROM generate_series(1, $RUNS) AS run, bench.walk($c, false, $args) AS k, bench.walk($c, true, $args) AS w,
         bench.lookup($c, $args) AS l;
SELECT max(audience), percentile_disc(0.5) WITHIN GROUP (ORDER BY lookup), max(batches),
       percentile_disc(0.5) WITHIN GROUP (ORDER BY ms), max(windows),
       percentile_disc(0.5) WITHIN GROUP (ORDER BY windowed), bool_and(agree) FROM runs;
SQL
)
    read -r audience lookup batches keyset windows windowed agree <<<"$result"
    [ "$agree" = t ] || { echo "the walks and the lookup disagree on $name ($design): $result" >&2; exit 1; }
    printf '%-34s %-11s %9s %9s %8s %9s %8s %9s\n' "$name" "$design" "$audience" "$lookup" "$batches" "$keyset" "$windows" "$windowed"
  done
done <<<"$cases"

if [ -z "${SKIP_PLANS:-}" ]; then
  while IFS=';' read -r name expression tags array_condition table_condition; do
    [ -n "$name" ] || continue
    IFS=',' read -r t1 t2 t3 <<<"$tags"
    args="$(nullable "$t1"), $(nullable "$t2"), $(nullable "$t3")"
    for plan in "tags_array|0|NULL" "tags_array|0|65536" "tags_array|$middle|$((middle + 65536))" "tags_table|0|NULL"; do
      IFS='|' read -r design after end <<<"$plan"
      condition=$array_condition
      [ "$design" = tags_table ] && condition=$table_condition
      echo
      echo "--- $design: $expression ($name), the batch after id $after$([ "$end" = NULL ] || echo " up to $end")"
      psql -tA -c "SET search_path = $design, public" -c "SELECT * FROM bench.explain($(quote "$condition"), $after, $end, $args)"
    done
  done <<<"$cases"
fi

if [ "$NEIGHBOURS" -gt 0 ]; then
  echo
  echo "One app's rare tags in a database shared with $NEIGHBOURS devices of a neighbour app that carry them"
  printf '%-16s %-19s %9s %9s %8s %9s\n' "tag" "index" "audience" "lookup" "batches" "windowed"
  for tag in group:vip beta; do
    for index in "GIN (tags)|devices_app_tags_idx" "GIN (app_id, tags)|devices_tags_only_idx"; do
      IFS='|' read -r label dropped <<<"$index"
      result=$(psql -tA -F' ' <<SQL | tail -n 1
SET search_path = tags_shared, public;
BEGIN;
DROP INDEX $dropped;  -- for this transaction only: the other index is the one left
SELECT * FROM bench.walk($(quote "$(has 3)"), true, '$tag', NULL, NULL);  -- warm-up
CREATE TEMP TABLE runs AS SELECT w.batches, w.ms AS windowed, l.ms AS lookup, l.devices AS audience
    FROM generate_series(1, $RUNS) AS run, bench.walk($(quote "$(has 3)"), true, '$tag', NULL, NULL) AS w,
         bench.lookup($(quote "$(has 3)"), '$tag', NULL, NULL) AS l;
SELECT max(audience), percentile_disc(0.5) WITHIN GROUP (ORDER BY lookup), max(batches),
       percentile_disc(0.5) WITHIN GROUP (ORDER BY windowed) FROM runs;
ROLLBACK;
SQL
)
      read -r audience lookup batches windowed <<<"$result"
      printf '%-16s %-19s %9s %9s %8s %9s\n' "$tag" "$label" "$audience" "$lookup" "$batches" "$windowed"
    done
  done
  if [ -z "${SKIP_PLANS:-}" ]; then
    for dropped in devices_app_tags_idx devices_tags_only_idx; do
      echo
      echo "--- tags_shared without $dropped: group:vip, the whole audience"
      psql -tA <<SQL
SET search_path = tags_shared, public;
BEGIN;
DROP INDEX $dropped;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) SELECT count(*) FROM devices d WHERE d.app_id = bench.app() AND d.tags @> ARRAY['group:vip'];
ROLLBACK;
SQL
    done
  fi
fi
