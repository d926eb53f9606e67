-- Events keep their JSON deflated (store/eventBodies.ts): PostgreSQL
-- compresses no value of a row under about 2 kB, and an event's 550-700 bytes
-- of jsonb were a third of what a completed trigger keeps on disk (2,099 of
-- 4,801 bytes of live rows, BENCHMARKS.md "Bytes per completed trigger");
-- deflated with a dictionary of what events say, a body is about 200 bytes.
-- The task an event names, and the interaction of one that names no task (a
-- message that answered none), which the readers and the sweeps find it by,
-- become columns of their own, since the body is opaque to SQL.
--
-- The events already written keep their JSON as it was, as a body of format
-- 0 (UTF-8 JSON, store/eventBodies.ts), until retention deletes them: SQL
-- cannot deflate. Rewriting every event takes this migration about a minute
-- per million events (49 s for a million on PostgreSQL 15, 2 shared cores).
ALTER TABLE events ADD COLUMN task_id text, ADD COLUMN interaction_id text, ADD COLUMN body bytea;

UPDATE events SET task_id = payload #>> '{data,task_id}',
                  interaction_id = CASE WHEN payload #>> '{data,task_id}' IS NULL THEN payload #>> '{data,interaction_id}' END,
                  body = '\x00'::bytea || convert_to(payload::text, 'UTF8');

DROP INDEX events_by_task;
DROP INDEX events_of_taskless_interactions;
ALTER TABLE events DROP COLUMN payload;
-- Deflated already: PostgreSQL would try again, for nothing, on the rare body over 2 kB (a long transcript).
ALTER TABLE events ALTER COLUMN body SET NOT NULL, ALTER COLUMN body SET STORAGE EXTERNAL;

CREATE INDEX events_by_task ON events (task_id) WHERE task_id IS NOT NULL;
CREATE INDEX events_of_taskless_interactions ON events (interaction_id) WHERE task_id IS NULL AND interaction_id IS NOT NULL;
