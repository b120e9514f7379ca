-- The event log's numbering (UPDATE ... SET seq) leaves every numbered
-- event's old version in the partial index events_unsequenced (seq IS NULL)
-- until a vacuum: the numbering's and the readers' scans of that index
-- visit each one, so their cost grows with the events numbered since the
-- last vacuum. Vacuum the table after a few thousand numbered events,
-- without the cost-based delay (the table is small).
ALTER TABLE events SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000,
    autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0.05);
