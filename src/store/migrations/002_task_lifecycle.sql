-- The task lifecycle: campaign settings, the dispatcher's claims, the
-- interactions (attempts) of each task, and the outbox of events.

ALTER TABLE campaigns
  ADD COLUMN schedule        jsonb,
  ADD COLUMN attempts        jsonb,
  ADD COLUMN provider        text NOT NULL DEFAULT 'simulator' CHECK (provider IN ('simulator', 'twilio', 'whatsapp_cloud')),
  ADD COLUMN provider_config jsonb NOT NULL DEFAULT '{}',
  -- NULL: no limit.
  ADD COLUMN max_concurrent  integer CHECK (max_concurrent > 0),
  ADD COLUMN updated_at      timestamptz;
-- Campaigns created before settings existed get the defaults the service
-- documents (every day 09:00-20:00 in the contact's zone; 3 attempts).
UPDATE campaigns SET
  schedule = '{"timezone": "contact", "windows": [{"days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"], "start": "09:00", "end": "20:00"}]}',
  attempts = '{"max": 3, "retry_delays_s": {"no_answer": 7200, "busy": 900, "voicemail": 14400, "failed": 1800}, "expire_after_s": 604800}',
  updated_at = created_at;
ALTER TABLE campaigns
  ALTER COLUMN schedule SET NOT NULL,
  ALTER COLUMN attempts SET NOT NULL,
  ALTER COLUMN updated_at SET NOT NULL;

-- status stays pending | in_progress | completed: pending while waiting for
-- its next attempt (or claimed for one), in_progress while an interaction
-- runs, completed with an outcome.
ALTER TABLE tasks
  ADD COLUMN outcome      text CHECK (outcome IN ('reached', 'unreachable', 'failed', 'cancelled', 'expired', 'opted_out')),
  ADD COLUMN attempts     integer NOT NULL DEFAULT 0,
  -- The contact's IANA zone as resolved when the trigger was accepted (NULL: not known).
  ADD COLUMN timezone     text,
  ADD COLUMN expires_at   timestamptz,
  -- A dispatcher's claim: the worker and until when. Claiming also moves
  -- due_at to the claim's end, so a task whose worker dies is due again
  -- then, for another worker, and the queue index stays the only one read.
  ADD COLUMN locked_by    text,
  ADD COLUMN locked_until timestamptz,
  ADD COLUMN completed_at timestamptz;
UPDATE tasks SET expires_at = created_at + interval '7 days';
ALTER TABLE tasks ALTER COLUMN expires_at SET NOT NULL;
ALTER TABLE tasks ADD CONSTRAINT tasks_outcome_when_completed CHECK ((status = 'completed') = (outcome IS NOT NULL));

-- Tasks are found by the client's external ids (GET /api/v2/tasks?source=&type=&value=).
CREATE INDEX triggers_ids ON triggers USING gin (ids jsonb_path_ops);

-- One attempt to converse: a call, or a WhatsApp conversation. Unlike the
-- trigger tables, interactions and events keep their foreign keys: they are
-- written by the dispatcher, a row per attempt, not per trigger request.
CREATE TABLE interactions (
  id              text PRIMARY KEY,
  org_id          text NOT NULL REFERENCES organizations (id),
  -- NULL for an inbound interaction that answers no task.
  task_id         text REFERENCES tasks (id),
  campaign_id     text NOT NULL REFERENCES campaigns (id),
  channel         text NOT NULL CHECK (channel IN ('voice', 'whatsapp')),
  provider        text NOT NULL,
  -- The campaign's provider_config as the interaction started: a campaign
  -- changed meanwhile must not change how its running calls are verified.
  provider_config jsonb NOT NULL,
  direction       text NOT NULL CHECK (direction IN ('outbound', 'inbound')),
  attempt         integer,
  -- starting: recorded, the provider not yet (or not certainly) asked;
  -- active: the provider has it; finalized: over, with an outcome.
  status          text NOT NULL CHECK (status IN ('starting', 'active', 'finalized')),
  to_phone        text NOT NULL,
  test_mode       boolean NOT NULL,
  provider_ref    text,
  provider_status text,
  outcome         text,
  -- When it is settled without a final report from the provider; also the
  -- dispatcher's claim on it while it settles one.
  settle_at       timestamptz,
  -- The worker that started it (NULL for inbound), for operators tracing a dispatch.
  started_by      text,
  started_at      timestamptz NOT NULL,
  ended_at        timestamptz,
  duration_s      integer,
  -- The attempt is started at most once: a second start of the same attempt
  -- cannot be recorded.
  UNIQUE (task_id, attempt)
);
CREATE UNIQUE INDEX interactions_provider_ref ON interactions (provider, provider_ref);
CREATE INDEX interactions_to_settle ON interactions (settle_at) WHERE status <> 'finalized';
CREATE INDEX interactions_running_by_campaign ON interactions (campaign_id) WHERE status <> 'finalized';

-- Messages a provider delivered to us, by the provider's own id: it may send
-- one twice, and only the first may count.
CREATE TABLE provider_messages (
  provider    text NOT NULL,
  message_id  text NOT NULL,
  received_at timestamptz NOT NULL,
  PRIMARY KEY (provider, message_id)
);

-- The transactional outbox: every event is written in the transaction of the
-- state change it reports, and kept for listing and delivery.
CREATE TABLE events (
  id         text PRIMARY KEY,
  org_id     text NOT NULL REFERENCES organizations (id),
  type       text NOT NULL CHECK (type IN ('task.completed', 'interaction.finalized')),
  -- The whole event as sent: {id, type, timestamp, data}.
  payload    jsonb NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX events_org ON events (org_id, id);
