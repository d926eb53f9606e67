-- Consent on file (domain/consent.ts): that a person agreed to be contacted by
-- the organization, on a channel, for a purpose. Kept by the number's keyed
-- digest (phone_digest, migration 027), as suppressions and number_attempts
-- are, with the number itself in `phone` only while the person is not
-- erased; erasure clears `phone`, `evidence` and `source_detail`, and keeps
-- the row as a revocation (revoked_by 'erasure') so that it never counts again.
-- No foreign keys, as the trigger tables: a bulk load of thousands is one
-- statement, and the organization's rows go with it.
CREATE TABLE consents (
  id            text PRIMARY KEY,
  org_id        text NOT NULL,
  phone_digest  text NOT NULL,
  phone         text,
  channel       text NOT NULL CHECK (channel IN ('voice', 'whatsapp')),
  purpose       text NOT NULL CHECK (purpose IN ('informational', 'transactional', 'healthcare', 'marketing')),
  kind          text NOT NULL CHECK (kind IN ('express', 'express_written', 'whatsapp_opt_in')),
  -- How it was captured: web_form, call, paper, sms, whatsapp, import, api, other.
  source        text NOT NULL,
  captured_at   timestamptz NOT NULL,
  -- A reference or a short text (domain/consent.ts MAX_EVIDENCE_LENGTH): personal, erased with the person.
  evidence      text,
  expires_at    timestamptz,
  revoked_at    timestamptz,
  revoked_by    text CHECK (revoked_by IN ('api', 'reply', 'provider', 'conversation', 'erasure')),
  -- The trigger that carried it, when one did.
  trigger_id    text,
  created_at    timestamptz NOT NULL,
  CHECK ((revoked_at IS NULL) = (revoked_by IS NULL))
);
-- The dispatcher reads a batch's numbers' consents by this index; listing by number too.
CREATE INDEX consents_by_number ON consents (org_id, phone_digest, captured_at);

-- A campaign's purpose, subject, artificial voice and consent required per
-- channel (domain/consent.ts ComplianceSettings), as the admin API sent them:
-- {} for the defaults (purpose informational).
ALTER TABLE campaigns ADD COLUMN compliance jsonb NOT NULL DEFAULT '{}';

-- The decision made before the attempt (domain/contactability.ts): allowed,
-- with the rules, profiles and consents it relied on. NULL on interactions
-- begun before decisions were made, and on inbound ones.
ALTER TABLE interactions ADD COLUMN decision jsonb;

-- A task's last decision that did not start an attempt: the deferral that
-- holds it (held_by 'law') or the block that completed it not_permitted.
-- Cleared when an attempt starts (the interaction keeps that one).
ALTER TABLE tasks ADD COLUMN decision jsonb;

-- Attempts to each number that a calling law's cap per number counted
-- (domain/callingLaw.ts, kind 'cap'), with each attempt's subject: written
-- only for attempts a cap bound (marketing to Florida, France...), kept as
-- long as the longest cap looks back (kept_until), by the number's digest.
CREATE TABLE law_attempts (
  org_id       text NOT NULL,
  phone_digest text NOT NULL,
  started_at   timestamptz[] NOT NULL,
  subjects     text[] NOT NULL,
  kept_until   timestamptz NOT NULL,
  PRIMARY KEY (org_id, phone_digest)
);
CREATE INDEX law_attempts_kept_until ON law_attempts (kept_until);

-- The operator's changes to the shipped calling-law profiles: a rule added
-- or overriding a shipped one of the same id (rule holds it whole), or a
-- shipped rule disabled (rule NULL). Read by every dispatcher at start and
-- when changed.
CREATE TABLE calling_law_overrides (
  rule_id     text PRIMARY KEY,
  profile_id  text NOT NULL,
  rule        jsonb,
  disabled    boolean NOT NULL,
  reason      text NOT NULL,
  updated_at  timestamptz NOT NULL,
  CHECK (disabled = (rule IS NULL))
);

-- A task the decision blocked (no consent on file, a registry) completes
-- not_permitted, with no attempt made. NOT VALID: every row already passes
-- the narrower check it replaces, so a year of tasks is not scanned again.
ALTER TABLE tasks DROP CONSTRAINT tasks_outcome_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_outcome_check
  CHECK (outcome IN ('reached', 'unreachable', 'failed', 'cancelled', 'expired', 'opted_out', 'not_permitted')) NOT VALID;

-- An opt-out (a suppression) revokes the number's consents in the same
-- statement, found by the number in the clear: only consents not revoked
-- yet are in this index, and an erased person's are revoked already.
CREATE INDEX consents_active_by_phone ON consents (org_id, phone) WHERE revoked_at IS NULL;
