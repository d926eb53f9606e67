-- What each completed trigger keeps, made smaller (measured on PostgreSQL 15
-- after 40,000 triggers end to end; BENCHMARKS.md, growth).

-- deliveries.org_id was written with every delivery (two a trigger, 32 bytes
-- each) and never read: a delivery is found by its event and its endpoint.
-- Dropped, it costs rows written before this migration nothing (the column
-- is only marked dropped), and rows after it nothing.
ALTER TABLE deliveries DROP COLUMN org_id;

-- events_by_task keyed by the task alone: its entries (two a trigger) carried
-- the event's id too, for a task's events to come in order without a sort;
-- a task has a handful of events, sorted in no time.
DROP INDEX events_by_task;
CREATE INDEX events_by_task ON events ((payload #>> '{data,task_id}')) WHERE payload #>> '{data,task_id}' IS NOT NULL;

-- Tasks, interactions and deliveries are written and then rewritten at each
-- step of a trigger's pipeline (pending, begun, completed; starting, active,
-- finalized; pending, claimed, sent): no update of theirs can be HOT, since
-- each changes a column that defines a partial index (status, due_at,
-- settle_at), so each leaves its row's last version behind until a vacuum,
-- two or three for each live row. Autovacuum's default (a fifth of the table
-- dead) let a table that is mostly dead versions grow to three times its
-- live rows before it was vacuumed; these are vacuumed once a fiftieth is,
-- so that the space of the versions left behind is used again soon. The
-- history sweep's deletions are vacuumed the same way.
ALTER TABLE tasks SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000);
ALTER TABLE interactions SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000);
ALTER TABLE deliveries SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000);
ALTER TABLE events SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000);
ALTER TABLE triggers SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000);
