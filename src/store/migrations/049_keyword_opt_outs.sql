-- A number suppressed because the person texted one of the carriers'
-- opt-out keywords (STOP...): the one suppression their START lifts
-- (services/twilioMessages.ts). NOT VALID: every row already there met the
-- narrower check.
ALTER TABLE suppressions DROP CONSTRAINT suppressions_reason_check;
ALTER TABLE suppressions ADD CONSTRAINT suppressions_reason_check CHECK (reason IN ('manual', 'reply', 'keyword', 'provider', 'conversation')) NOT VALID;
