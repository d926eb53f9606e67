-- SMS, a third channel (texts through Twilio Messaging: docs/messaging.md).
-- The new checks admit every value the old ones did; NOT VALID, so that the
-- interactions table (one of the largest) is not scanned under this
-- migration's lock: every row already there met the narrower check.
ALTER TABLE campaigns DROP CONSTRAINT campaigns_channel_check;
ALTER TABLE campaigns ADD CONSTRAINT campaigns_channel_check CHECK (channel IN ('voice', 'whatsapp', 'sms')) NOT VALID;
ALTER TABLE interactions DROP CONSTRAINT interactions_channel_check;
ALTER TABLE interactions ADD CONSTRAINT interactions_channel_check CHECK (channel IN ('voice', 'whatsapp', 'sms')) NOT VALID;
ALTER TABLE consents DROP CONSTRAINT consents_channel_check;
ALTER TABLE consents ADD CONSTRAINT consents_channel_check CHECK (channel IN ('voice', 'whatsapp', 'sms')) NOT VALID;
