-- Two indexes that every trigger paid for at each step of its pipeline, for
-- one rare read each, which the row read there now answers itself. No update
-- of a task or a delivery is a HOT update (each changes its status, which
-- defines a partial index), so an index on either table takes a new entry at
-- every step: measured end to end (20,000 triggers), these two were about 7
-- of the 61 WAL records and 6 % of PostgreSQL's statement time per trigger.
--
-- tasks_trigger_id_key (trigger_id): a task was made pending, begun and
-- completed, three entries, for GET /api/v2/triggers/{id} to find the
-- trigger's task. The trigger now names its task, written in the statement
-- that writes both.
ALTER TABLE triggers ADD COLUMN task_id text;
UPDATE triggers t SET task_id = k.id FROM tasks k WHERE k.trigger_id = t.id;
ALTER TABLE triggers ALTER COLUMN task_id SET NOT NULL;
ALTER TABLE tasks DROP CONSTRAINT tasks_trigger_id_key;

-- deliveries_event (event_id): each of an event's deliveries was written
-- pending and then settled, two entries each, for the event's page and a
-- redelivery to find them. The event now lists its deliveries, written in
-- the statement that writes both; a redelivery adds the one it makes.
ALTER TABLE events ADD COLUMN delivery_ids bigint[] NOT NULL DEFAULT '{}';
UPDATE events e SET delivery_ids = d.ids
FROM (SELECT event_id, array_agg(id ORDER BY id) AS ids FROM deliveries GROUP BY event_id) d
WHERE d.event_id = e.id;
DROP INDEX deliveries_event;
