-- An endpoint's health (GET .../webhook-endpoints/{id}/health, the console):
-- how its attempts went over the last 24 hours, its last failures, and a
-- test event sent to it on request.
--
-- endpoint_hours: each endpoint's attempts counted by the hour, added to by
-- the statement that records attempts (one row per endpoint and hour it
-- names, however many attempts), so that 24 hours of a busy endpoint are 25
-- rows to read, not every delivery. Latencies are counted in the buckets of
-- domain/endpointHealth.ts (LATENCY_BOUNDS_MS, then one beyond the last).
-- Counting starts with this migration: attempts made before it are not in it.
CREATE TABLE endpoint_hours (
  endpoint_id     text NOT NULL,
  hour            timestamptz NOT NULL,
  attempts        integer NOT NULL,
  succeeded       integer NOT NULL,
  latency_ms_sum  bigint NOT NULL,
  latency_ms_max  integer NOT NULL,
  latency_buckets integer[] NOT NULL,
  PRIMARY KEY (endpoint_id, hour)
);

-- The last failures, newest first: the attempts after which a delivery was
-- due again (delivery_attempts, now naming their endpoint), and the final
-- attempts of deliveries that gave up (on the delivery's row, 017). Both
-- indexes take entries only for failures: none for the delivery that
-- succeeds at its first attempt, nearly every one.
--
-- A delivery settled before 017 kept its settling attempt (a success, or the
-- failure it gave up after) in delivery_attempts: it moves to the row, as
-- 017 writes it, so that delivery_attempts holds only attempts after which
-- their delivery was due again.
UPDATE deliveries d SET final_status_code = a.status_code, final_latency_ms = a.latency_ms, final_error = a.error
FROM delivery_attempts a
WHERE a.delivery_id = d.id AND a.attempt = d.attempts AND d.status <> 'pending' AND d.final_latency_ms IS NULL;
DELETE FROM delivery_attempts a USING deliveries d
WHERE a.delivery_id = d.id AND a.attempt = d.attempts AND d.status <> 'pending';
ALTER TABLE delivery_attempts ADD COLUMN endpoint_id text;
UPDATE delivery_attempts a SET endpoint_id = d.endpoint_id FROM deliveries d WHERE d.id = a.delivery_id;
ALTER TABLE delivery_attempts ALTER COLUMN endpoint_id SET NOT NULL;
CREATE INDEX delivery_attempts_by_endpoint ON delivery_attempts (endpoint_id, attempted_at);
CREATE INDEX deliveries_failed_by_endpoint ON deliveries (endpoint_id, completed_at) WHERE status = 'failed' AND final_latency_ms IS NOT NULL;

-- webhook.test: an event sent to one endpoint on request, to check that it
-- receives and verifies webhooks. It reports nothing, and the events list
-- leaves it out.
ALTER TABLE events DROP CONSTRAINT events_type_check;
ALTER TABLE events ADD CONSTRAINT events_type_check CHECK (type IN ('task.completed', 'interaction.finalized', 'webhook.test'));
