-- Location targeting: devices within a radius of a point, on PostgreSQL's cube and
-- earthdistance extensions (in Debian's postgresql package).
CREATE EXTENSION IF NOT EXISTS cube;
CREATE EXTENSION IF NOT EXISTS earthdistance;

-- The coordinates the Notifiable SDKs send as platform properties (or an app as custom ones),
-- read once when the device is written. Anything that is not a decimal number within range is
-- no location, so a bad value can never fail a query.
ALTER TABLE devices ADD COLUMN latitude double precision GENERATED ALWAYS AS (
    CASE WHEN COALESCE(platform_properties ->> 'latitude', custom_properties ->> 'latitude') ~ '^[ \t\r\n]*[-+]?[0-9]{1,3}(\.[0-9]{1,15})?[ \t\r\n]*$'
         THEN CASE WHEN abs(COALESCE(platform_properties ->> 'latitude', custom_properties ->> 'latitude')::float8) <= 90
                   THEN COALESCE(platform_properties ->> 'latitude', custom_properties ->> 'latitude')::float8 END END
) STORED;
ALTER TABLE devices ADD COLUMN longitude double precision GENERATED ALWAYS AS (
    CASE WHEN COALESCE(platform_properties ->> 'longitude', custom_properties ->> 'longitude') ~ '^[ \t\r\n]*[-+]?[0-9]{1,3}(\.[0-9]{1,15})?[ \t\r\n]*$'
         THEN CASE WHEN abs(COALESCE(platform_properties ->> 'longitude', custom_properties ->> 'longitude')::float8) <= 180
                   THEN COALESCE(platform_properties ->> 'longitude', custom_properties ->> 'longitude')::float8 END END
) STORED;

-- A device's position on the earth. earthdistance's own ll_to_earth finds its types through
-- the search path, which pg_dump's restore empties, so an index on it cannot be restored; this
-- wrapper fixes the path to the extension's schema.
DO $$
DECLARE
    schema text := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'earthdistance');
BEGIN
    EXECUTE format(
        'CREATE FUNCTION device_position(latitude float8, longitude float8) RETURNS %I.earth
         LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SET search_path = %I, pg_catalog
         AS $f$ SELECT ll_to_earth(latitude, longitude) $f$', schema, schema);
END
$$;

-- "Within r metres of a point" is answered from this index: earth_box(point, r) @> position.
CREATE INDEX devices_location_idx ON devices USING gist (device_position(latitude, longitude))
    WHERE latitude IS NOT NULL AND longitude IS NOT NULL;
