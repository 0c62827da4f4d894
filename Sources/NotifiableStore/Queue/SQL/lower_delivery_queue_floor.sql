-- lower_delivery_queue_floor(waiting_day): moves the queue's floor (delivery_queue_floor: no
-- delivery before its day waits or runs) down to waiting_day, for a statement that makes
-- deliveries of an earlier day wait: a notification fanned out days after it was created
-- (FanOutStore), dead deliveries re-queued (QueueAdminStore), a detached day attached again
-- (RetentionStore). Called in that statement's transaction: the floor's row stays locked until it
-- ends, so raise_delivery_queue_floor cannot move the floor past those deliveries meanwhile. A day
-- from today on needs nothing: the floor is never raised past yesterday.
--
-- By hand: SELECT day FROM delivery_queue_floor;

CREATE OR REPLACE FUNCTION lower_delivery_queue_floor(waiting_day integer) RETURNS void
LANGUAGE sql VOLATILE AS $$
    UPDATE delivery_queue_floor SET day = LEAST(day, waiting_day)
    WHERE waiting_day < delivery_day(now())
$$;
