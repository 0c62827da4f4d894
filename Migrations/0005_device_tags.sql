-- Device tags: labels an app (or its backend) puts on devices, targeted by tag expressions such
-- as (username:alice || group:beta) && !lang:fr.
--
-- Kept as a sorted array on the device row, indexed with GIN on (app_id, tags). Measured
-- against a device_tags (app_id, tag, device_id) join table on 1,000,000 devices
-- (docs/performance.md, Benchmarks/tags/measure.sh): the array answers every expression from
-- the device's row, where the join table needs a probe per tag and device, and was 20 to 30
-- times slower to walk on common tags, negations and alternatives. btree_gin puts app_id in the
-- same GIN index, so one app's rare tag is found without going through the devices of other
-- apps that use the same tag name.

CREATE EXTENSION IF NOT EXISTS btree_gin;

-- 0 to 60 tags of 1 to 120 characters of letters, digits and _ @ # . : -.
CREATE FUNCTION device_tags_are_valid(tags text[]) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT cardinality(tags) <= 60
       AND NOT EXISTS (SELECT 1 FROM unnest(tags) AS tag WHERE tag IS NULL OR tag !~ '^[A-Za-z0-9_@#.:-]{1,120}$')
$$;

ALTER TABLE devices ADD COLUMN tags text[] NOT NULL DEFAULT '{}' CHECK (device_tags_are_valid(tags));

CREATE INDEX devices_app_tags_idx ON devices USING gin (app_id, tags);
