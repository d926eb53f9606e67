-- An organization's callback numbers (docs/callbacks.md): numbers no campaign
-- calls from (a published line, say) that the organization names as where
-- people call it back. A call to one lands on the caller's task as a call to
-- a campaign's own number does; `campaign_id` names the campaign whose
-- settings answer a caller without a task. `number` is what the campaign's
-- platform names the number by: an E.164 number (Twilio, Retell), a phone
-- number's id (Vapi) or an agent's (ElevenLabs). A number is one
-- organization's.
CREATE TABLE callback_numbers (
  provider text NOT NULL,
  number text NOT NULL,
  org_id text NOT NULL REFERENCES organizations (id),
  campaign_id text NOT NULL REFERENCES campaigns (id),
  created_at timestamptz NOT NULL,
  PRIMARY KEY (provider, number)
);
CREATE INDEX callback_numbers_of_organization ON callback_numbers (org_id);
