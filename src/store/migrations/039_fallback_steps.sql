-- WhatsApp then voice in one task (issue 36, item 4). A campaign may name a
-- fallback step: another campaign of its organization on the other channel,
-- and when the task goes on to it. A task that went on records the step it
-- left in `steps` (campaign, channel, why it ended, attempts it spent), so
-- that its later attempts count under the fallback campaign's policy and
-- task.completed can list every step. Both are NULL unless used: nullable
-- columns with no default cost no rewrite and nothing per trigger.
ALTER TABLE campaigns ADD COLUMN fallback jsonb;
ALTER TABLE tasks ADD COLUMN steps jsonb;
