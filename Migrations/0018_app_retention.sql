-- An app may keep its deliveries, notifications, sandbox pushes and gone devices for fewer days
-- than the service's NOTIFIABLE_RETENTION_DAYS; null keeps the service's period. Never for more:
-- the service drops whole days of deliveries, every app's at once, so its period is the longest
-- any app gets (RetentionStore takes the smaller of the two).
ALTER TABLE apps ADD COLUMN retention_days integer CHECK (retention_days BETWEEN 1 AND 3650);

-- An app keeping fewer days has its old deliveries removed row by row, and those deletes are not
-- taken from the counters: deliveries_count_changes
-- (Sources/NotifiableStore/Notifications/SQL/deliveries_count_changes.sql).
