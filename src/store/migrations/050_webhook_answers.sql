-- What receivers answered, beside the status code each attempt already
-- keeps: the answer's headers and the opening of its body, bounded as the
-- poster reads them (webhooks/httpPoster.ts), as JSON {headers, body,
-- body_truncated}; NULL when no answer came, and for attempts made before.
-- As for the status code (migration 017), the attempt that settles a
-- delivery keeps it on the delivery's row, the others in delivery_attempts.
--
-- And what `cli listen` reported of its forwards of an event to a local
-- receiver (no endpoint, so no delivery row): its last attempts, each
-- {at, status_code, latency_ms, error}, on the event's own row, so that an
-- event's history goes with it and nothing is written for an organization
-- that never runs listen. Adding nullable columns rewrites no table.
ALTER TABLE delivery_attempts ADD COLUMN response jsonb;
ALTER TABLE deliveries ADD COLUMN final_response jsonb;
ALTER TABLE events ADD COLUMN listen_forwards jsonb;
