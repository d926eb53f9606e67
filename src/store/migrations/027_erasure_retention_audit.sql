-- Erasure, retention and the audit log (services/erasure.ts, services/retention.ts, store/auditLog.ts).

-- What an erased suppression keeps of its number: a keyed hash, 'sha256:' and
-- the hex of SHA-256 over the service's phone hash key (PHONE_HASH_KEY, never
-- stored in the database) followed by the number. A number cannot be told
-- from it without the key; with the key, the number sent in a new trigger
-- still meets its suppression. E.164 numbers never start with 's', so the
-- digest and the number share the suppressions' primary key.
CREATE FUNCTION phone_digest(key bytea, phone text) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT 'sha256:' || encode(sha256(key || convert_to(phone, 'UTF8')), 'hex') $$;

-- Which key the digests were made with, as a digest of a fixed text: a process
-- started with another key would no longer find erased suppressions, so it
-- refuses to start instead (store/phoneHashKey.ts).
CREATE TABLE service_keys (
  name        text PRIMARY KEY,
  fingerprint text NOT NULL,
  created_at  timestamptz NOT NULL
);

-- How long an organization keeps the personal data of a completed task (null:
-- the default, 365 days), and how far the retention sweep has read its events:
-- the (txid, id) of the last one read, in the order of events_org_txid.
ALTER TABLE organizations
  ADD COLUMN retention_days integer CHECK (retention_days BETWEEN 1 AND 3650),
  ADD COLUMN retention_swept_txid xid8,
  ADD COLUMN retention_swept_event text;

-- A reply that answers no task keeps the person's number on an interaction with
-- no task: an erasure finds those by number. Only such rows take an entry (one
-- each, written once), never an outbound attempt's.
CREATE INDEX interactions_inbound_by_phone ON interactions (org_id, to_phone) WHERE task_id IS NULL;

-- Operator and client changes to an organization's setup, and erasures: who
-- (the operator, or an API key's id), what, to what, when and from which
-- address (null from the command line). Details never hold a secret, nor a
-- phone number in the clear once it has been erased.
CREATE TABLE audit_log (
  id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at       timestamptz NOT NULL,
  org_id   text,
  actor    text NOT NULL,
  address  text,
  action   text NOT NULL,
  target   text NOT NULL,
  details  jsonb NOT NULL
);
CREATE INDEX audit_log_by_org ON audit_log (org_id, id);
