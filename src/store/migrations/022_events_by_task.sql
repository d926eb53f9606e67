-- A task's events, for GET /api/v2/tasks/{id}/events and the console's task
-- page: the interaction.finalized of each of its interactions and its
-- task.completed, found by the task_id each carries as sent. Events are
-- written once (a redelivery only lists its delivery, a HOT update), so this
-- costs one entry per event written for a task, and none for the inbound
-- interactions that answer no task.
CREATE INDEX events_by_task ON events ((payload #>> '{data,task_id}'), id) WHERE payload #>> '{data,task_id}' IS NOT NULL;
