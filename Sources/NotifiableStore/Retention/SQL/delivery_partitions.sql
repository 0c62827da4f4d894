-- delivery_partitions(): every partition of deliveries with the days it holds ([first_day,
-- end_day)), read from the catalog; the legacy partition's first day is null (MINVALUE). Read by
-- DeliveryPartitions (retention, making days ahead) and raise_delivery_queue_floor.
--
-- By hand: SELECT * FROM delivery_partitions();

CREATE OR REPLACE FUNCTION delivery_partitions()
RETURNS TABLE (name text, first_day integer, end_day integer)
LANGUAGE sql STABLE AS $$
    SELECT c.relname::text,
           (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \((-?\d+)\)'))[1]::integer,
           (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \((-?\d+)\)'))[1]::integer
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'deliveries'::regclass AND NOT i.inhdetachpending
    ORDER BY 3
$$;
