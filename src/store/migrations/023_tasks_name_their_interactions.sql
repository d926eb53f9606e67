-- A task's page (GET /api/v2/tasks/{id}, the console) lists its interactions.
-- No index reads interactions by task, and one would take an entry at each
-- of an interaction's steps (starting, active, finalized: none a HOT
-- update), so the task now names them, as a trigger names its task (019):
-- written by the statement that begins an attempt, and by the one that
-- records an inbound reply to the task. Each is then read by primary key,
-- where the task page scanned every interaction.
ALTER TABLE tasks ADD COLUMN interaction_ids text[] NOT NULL DEFAULT '{}';
UPDATE tasks t SET interaction_ids = i.ids
FROM (SELECT task_id, array_agg(id ORDER BY started_at, id) AS ids FROM interactions WHERE task_id IS NOT NULL GROUP BY task_id) i
WHERE i.task_id = t.id;
