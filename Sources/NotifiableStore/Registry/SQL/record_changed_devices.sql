-- record_changed_devices: the rest of each device's history (device_events), which
-- record_registered_devices starts: moved to another user or anonymised (with the previous and the
-- new alias in their own columns), token changed (tokens shown by their first 8 characters only),
-- merged into another device, invalidated (and why), unregistered, registered again.
-- Statement-level, over the transition tables, so a bulk update writes one INSERT … SELECT.
-- Erasing a device writes no history: its history is what the erasure removes
-- (PersonErasureStore).
--
-- By hand: SELECT * FROM device_events WHERE device_id = 1 ORDER BY id;

CREATE OR REPLACE FUNCTION record_changed_devices() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO device_events (device_id, event, detail, previous_alias, user_alias)
    SELECT n.id, e.event, e.detail, e.previous_alias, e.user_alias
    FROM old_devices o
    JOIN new_devices n ON n.id = o.id
    CROSS JOIN LATERAL (VALUES
        (1, CASE WHEN n.user_alias IS DISTINCT FROM o.user_alias
                 THEN CASE WHEN n.user_alias IS NULL THEN 'anonymised' ELSE 'user_changed' END END,
            NULL, o.user_alias, n.user_alias),
        -- Tokens are shown by their first 8 characters only.
        (2, CASE WHEN lower(n.token) IS DISTINCT FROM lower(o.token) AND n.merged_into IS NULL THEN 'token_changed' END,
            left(o.token, 8) || '… → ' || left(n.token, 8) || '…', NULL, NULL),
        (3, CASE WHEN n.merged_into IS NOT NULL AND o.merged_into IS NULL THEN 'merged' END, 'into device ' || n.merged_into, NULL, NULL),
        (4, CASE WHEN n.invalidated_at IS NOT NULL AND o.invalidated_at IS NULL THEN 'invalidated' END, n.invalidation_reason, NULL, NULL),
        (5, CASE WHEN n.unregistered_at IS NOT NULL AND o.unregistered_at IS NULL AND n.merged_into IS NULL THEN 'unregistered' END,
            NULL, NULL, NULL),
        (6, CASE WHEN (o.unregistered_at IS NOT NULL AND n.unregistered_at IS NULL)
                   OR (o.invalidated_at IS NOT NULL AND n.invalidated_at IS NULL) THEN 'registered_again' END, NULL, NULL, NULL)
    ) AS e(position, event, detail, previous_alias, user_alias)
    WHERE e.event IS NOT NULL AND n.erased_at IS NULL
    ORDER BY n.id, e.position;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER devices_history_update AFTER UPDATE ON devices
    REFERENCING OLD TABLE AS old_devices NEW TABLE AS new_devices
    FOR EACH STATEMENT EXECUTE FUNCTION record_changed_devices();
