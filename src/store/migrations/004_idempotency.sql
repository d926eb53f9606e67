-- Idempotency keys of POST /api/v2/triggers, per organization, kept 24 hours.
-- A key is reserved (in_flight) before its trigger is recorded and marked done,
-- with the answer to replay, by the statement that records the trigger.
CREATE TABLE idempotency_keys (
  org_id       text NOT NULL,
  key          text NOT NULL,
  -- SHA-256 of the validated request body: the same key with another body is refused.
  request_hash bytea NOT NULL,
  status       text NOT NULL CHECK (status IN ('in_flight', 'done')),
  -- Who holds the reservation: the id of the trigger it is for. The trigger
  -- is recorded only while its request still holds the key, so a request
  -- whose reservation was taken over (it stalled past the lease) records nothing.
  token        text NOT NULL,
  -- The 201's data, replayed as it was.
  response     jsonb,
  -- For an in_flight reservation: until when it holds (a process that died
  -- with it leaves it to a retry after that).
  locked_until timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL,
  PRIMARY KEY (org_id, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
