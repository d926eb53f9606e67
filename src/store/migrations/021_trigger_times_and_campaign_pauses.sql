-- A trigger may say when outreach may begin and when it is no longer
-- wanted: kept as sent, beside the rest of what the client sent. The task
-- carries their effect (its first due_at, its expires_at).
ALTER TABLE triggers ADD COLUMN not_before timestamptz, ADD COLUMN expires_at timestamptz;

-- A paused campaign starts no attempt until it is resumed; its triggers are
-- still accepted and its tasks fall due as usual, to wait.
ALTER TABLE campaigns ADD COLUMN paused_at timestamptz;
