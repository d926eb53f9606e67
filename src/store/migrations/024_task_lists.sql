-- An organization's tasks are listed newest first (GET /api/v2/tasks, the
-- console), in a range of creation times, and found by the number they reach.
-- Both indexes are on triggers, which is written once and never updated:
-- every update of a task is a new row version with an entry in every index
-- of tasks (019), so one index there would cost three entries a trigger
-- (made pending, begun, completed) where here it costs one. A trigger names
-- its task (019), and the task its interactions (023).
--
-- phone: the number the trigger's task reaches, as the task's contact holds
-- it (the trigger's own contact may be absent when the person is on file).
ALTER TABLE triggers ADD COLUMN phone text;
UPDATE triggers tr SET phone = t.contact->>'phone' FROM tasks t WHERE t.id = tr.task_id;
CREATE INDEX triggers_by_org ON triggers (org_id, created_at, id);
CREATE INDEX triggers_by_phone ON triggers (org_id, phone);
ALTER TABLE triggers ALTER COLUMN phone SET NOT NULL;
