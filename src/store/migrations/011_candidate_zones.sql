-- A contact may be in several time zones: a mobile of a country that spans
-- several (Spain's reach the Canaries, Russia's eleven zones) tells only its
-- country. A task keeps every zone its contact may be in, which its attempts
-- must all find inside the campaign's window, and what told them: the
-- trigger's contact.timezone, the zone on file for the person, the number's
-- area, its country, or the campaign's fallback (numbers of no country). No
-- zones, and no source, only when the campaign keeps a zone of its own and
-- nothing told the contact's.
ALTER TABLE tasks
  ADD COLUMN timezones       text[] NOT NULL DEFAULT '{}',
  ADD COLUMN timezone_source text CHECK (timezone_source IN ('sent', 'on_file', 'phone', 'country', 'fallback'));

-- Tasks recorded before knew one zone or none; where none, the campaign's
-- fallback served. A task pending now keeps the one zone it was accepted with
-- (zones are decided when a trigger is accepted, never again). The new code
-- stops writing tasks.timezone, which this migration drops: stop processes of
-- the earlier version before starting this one.
UPDATE tasks
SET timezones = ARRAY[tasks.timezone],
    timezone_source = CASE WHEN triggers.contact->>'timezone' = tasks.timezone THEN 'sent'
                           WHEN tasks.contact->>'timezone' = tasks.timezone THEN 'on_file'
                           ELSE 'phone' END
FROM triggers
WHERE triggers.id = tasks.trigger_id AND tasks.timezone IS NOT NULL;
UPDATE tasks
SET timezones = ARRAY[campaigns.schedule->>'fallback_timezone'], timezone_source = 'fallback'
FROM campaigns
WHERE campaigns.id = tasks.campaign_id AND tasks.timezone IS NULL AND campaigns.schedule->>'fallback_timezone' IS NOT NULL;

ALTER TABLE tasks
  ALTER COLUMN timezones DROP DEFAULT,
  DROP COLUMN timezone,
  ADD CONSTRAINT tasks_timezones_with_source CHECK ((timezone_source IS NULL) = (cardinality(timezones) = 0));
