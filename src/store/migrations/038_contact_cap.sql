-- An organization's cap on attempts to one number across its campaigns
-- (domain/contactCap.ts): each figure NULL for no such rule, both NULL (the
-- default) for no cap at all.
ALTER TABLE organizations
  ADD COLUMN contact_cap_per_24h integer CHECK (contact_cap_per_24h > 0),
  ADD COLUMN contact_cap_per_local_day integer CHECK (contact_cap_per_local_day > 0);

-- Why a pending task waits, when something other than its campaign's window
-- holds it ('contact_cap' here; 'sender' for a sender's pace): set when it is
-- held, cleared when its attempt starts. Shared with sender pacing, hence IF
-- NOT EXISTS.
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS held_by text;

-- When attempts to each number started, for organizations with a cap only:
-- one row a number, locked by the dispatcher that starts an attempt to it so
-- that two dispatchers never both take its last place. The number is kept as
-- its keyed digest (phone_digest, migration 027), never in the clear; the
-- row is deleted with the person on erasure, and by the history sweep once
-- `kept_until` has passed (no attempt in it matters to the cap any more).
CREATE TABLE number_attempts (
  org_id       text NOT NULL,
  phone_digest text NOT NULL,
  started_at   timestamptz[] NOT NULL,
  kept_until   timestamptz NOT NULL,
  PRIMARY KEY (org_id, phone_digest)
);
CREATE INDEX number_attempts_kept_until ON number_attempts (kept_until);
