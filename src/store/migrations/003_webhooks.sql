-- Webhooks: the endpoints organizations register, and the delivery of each
-- event to each endpoint subscribed to its type, with every attempt logged.

CREATE TABLE webhook_endpoints (
  id                     text PRIMARY KEY,
  org_id                 text NOT NULL REFERENCES organizations (id),
  url                    text NOT NULL,
  -- The event types it receives.
  events                 text[] NOT NULL,
  enabled                boolean NOT NULL,
  -- Why it was disabled by the service (a 410 from the receiver); NULL when
  -- enabled or disabled by its owner.
  disabled_reason        text,
  -- The signing secret (whsec_...). It must be readable to sign, so it is
  -- kept as issued; the API shows it once, when issued.
  secret                 text NOT NULL,
  -- After a rotation the previous secret also signs, until it expires.
  previous_secret        text,
  previous_secret_until  timestamptz,
  created_at             timestamptz NOT NULL,
  updated_at             timestamptz NOT NULL,
  -- Deleted endpoints are kept for the delivery log.
  deleted_at             timestamptz
);
CREATE INDEX webhook_endpoints_org ON webhook_endpoints (org_id) WHERE deleted_at IS NULL;

-- One event to one endpoint: written in the transaction that writes the
-- event, retried until it succeeds or gives up. A redelivery is a new row.
CREATE TABLE deliveries (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id      text NOT NULL REFERENCES events (id),
  endpoint_id   text NOT NULL REFERENCES webhook_endpoints (id),
  org_id        text NOT NULL,
  -- pending: to be attempted at due_at; succeeded; failed: given up.
  status        text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts      integer NOT NULL DEFAULT 0,
  -- As for tasks, a claim moves due_at to the end of its lease.
  due_at        timestamptz NOT NULL,
  locked_by     text,
  locked_until  timestamptz,
  created_at    timestamptz NOT NULL,
  completed_at  timestamptz
);
CREATE INDEX deliveries_due ON deliveries (due_at) WHERE status = 'pending';
CREATE INDEX deliveries_pending_by_endpoint ON deliveries (endpoint_id, due_at) WHERE status = 'pending';
CREATE INDEX deliveries_event ON deliveries (event_id);

CREATE TABLE delivery_attempts (
  delivery_id  bigint NOT NULL REFERENCES deliveries (id),
  attempt      integer NOT NULL,
  attempted_at timestamptz NOT NULL,
  -- NULL when no answer came (timeout, network error, refused address).
  status_code  integer,
  latency_ms   integer NOT NULL,
  error        text,
  PRIMARY KEY (delivery_id, attempt)
);

-- The transaction that wrote each event. Ids follow the clock of the process
-- that made them, and transactions commit in another order, so a reader
-- that pages by id could pass an event that commits later with a smaller id.
-- Pages follow (txid, id) instead, and stop short of every transaction still
-- in progress: what a page has passed is final.
ALTER TABLE events ADD COLUMN txid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX events_org_txid ON events (org_id, txid, id);
