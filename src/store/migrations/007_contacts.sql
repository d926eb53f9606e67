-- The contact directory: each organization's contacts, found by the external
-- ids they were triggered with. A trigger that sends `contact` creates or
-- updates its person; one that leaves it out may reach a person already on
-- file through an id of a source whose contact is optional.

CREATE TABLE contacts (
  id         text PRIMARY KEY,
  org_id     text NOT NULL REFERENCES organizations (id),
  -- The contact object as the API names its fields (first_name, phone, ...):
  -- fields a trigger sends replace the stored ones, fields it leaves out stay.
  fields     jsonb NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

-- One external id names at most one contact of its organization. Links are
-- only ever added, so an id that named a contact names it for good. Like the
-- trigger tables, written by the group commit with no foreign key to check.
CREATE TABLE contact_ids (
  org_id     text NOT NULL,
  source     text NOT NULL,
  type       text NOT NULL,
  value      text NOT NULL,
  contact_id text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (org_id, source, type, value)
);

-- A trigger that reaches a contact on file records no contact of its own.
ALTER TABLE triggers ALTER COLUMN contact DROP NOT NULL;

-- Whom the task reaches, as known when its trigger was accepted: the trigger's
-- own contact (always in test mode), or the directory's person with the
-- trigger's fields merged over it. Kept on the task, so that the zone it was
-- scheduled in and the number it dials never disagree.
ALTER TABLE tasks
  ADD COLUMN contact_id text,
  ADD COLUMN contact    jsonb;
UPDATE tasks SET contact = triggers.contact FROM triggers WHERE triggers.id = tasks.trigger_id;
ALTER TABLE tasks ALTER COLUMN contact SET NOT NULL;
