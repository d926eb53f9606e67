-- WhatsApp's customer service window (domain/messagingWindow.ts): while it is
-- open, a business may send the person any message, not only an approved
-- template. Each message the person sends opens it, or keeps it open, for 24
-- hours from that message; this is when the window of the interaction the
-- message landed on closes. NULL: the person has written nothing there (or
-- the channel has no such window).
ALTER TABLE interactions ADD COLUMN window_closes_at timestamptz;

-- interaction.message_received: a message the person sent, reported as it
-- lands. NOT VALID: the check holds for every row written from now on, and
-- every row already there met the narrower one it replaces, so the events
-- table (the largest) is not scanned under this migration's lock.
ALTER TABLE events DROP CONSTRAINT events_type_check;
ALTER TABLE events ADD CONSTRAINT events_type_check
  CHECK (type IN ('task.completed', 'interaction.finalized', 'interaction.result_added', 'interaction.message_received', 'webhook.test')) NOT VALID;
