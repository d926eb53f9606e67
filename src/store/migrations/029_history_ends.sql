-- History ends (services/history.ts): what an organization's tasks leave
-- behind is deleted once they completed longer ago than its retention_days,
-- row and all, rather than kept forever with its personal columns blanked;
-- what a client or an operator still wants of old work survives as daily
-- counts, counted by the statements that write the events.

-- Where the sweep stands with each organization: retention_swept_txid and
-- retention_swept_event (027) name the last event whose history it has
-- deleted, in the order of events_org_txid (the order transactions committed
-- in). The sweep before this one only blanked personal columns up to there:
-- it starts again from the first event, and deletes what it blanked.
-- history_due_at is the earliest time anything of the organization's may be
-- due for deletion (the first event past that position, or the sweep's last
-- look when there was none, plus its retention): the sweep takes the
-- organizations in that order and no other, so that one with nothing due
-- costs nothing, and min(history_due_at) is how long the oldest due history
-- has waited. NULL until the sweep has looked (at once).
ALTER TABLE organizations ADD COLUMN history_due_at timestamptz;
UPDATE organizations SET retention_swept_txid = NULL, retention_swept_event = NULL;
CREATE INDEX organizations_history_due ON organizations (history_due_at NULLS FIRST);

-- What survives a task's deletion: per organization, UTC day (of a task's
-- completion, of an interaction's end), campaign (routing key and channel)
-- and test mode, how many tasks completed with each outcome and the attempts
-- they took (kind 'task'), and how many outbound attempts and inbound
-- messages ended with each outcome and the seconds they lasted ('outbound',
-- 'inbound').
CREATE TABLE daily_counts (
  org_id    text NOT NULL,
  day       date NOT NULL,
  campaign  text NOT NULL,
  channel   text NOT NULL,
  test_mode boolean NOT NULL,
  kind      text NOT NULL CHECK (kind IN ('task', 'outbound', 'inbound')),
  outcome   text NOT NULL,
  count     bigint NOT NULL,
  attempts  bigint NOT NULL,
  seconds   bigint NOT NULL,
  PRIMARY KEY (org_id, day, campaign, channel, test_mode, kind, outcome)
);

-- Each statement that writes events adds what they count here, in its own
-- rows: concurrent settlements never meet on a counter's row, as they would
-- adding to daily_counts itself. The sweep moves them into daily_counts
-- every second or so; a read adds those not yet moved.
CREATE TABLE daily_count_changes (LIKE daily_counts);

-- What was counted before this migration, from the events that report it.
INSERT INTO daily_counts (org_id, day, campaign, channel, test_mode, kind, outcome, count, attempts, seconds)
SELECT org_id, (at AT TIME ZONE 'UTC')::date, campaign, channel, test_mode, kind, outcome, count(*), sum(attempts), sum(seconds)
FROM (
  SELECT org_id, coalesce((payload #>> '{data,completed_at}')::timestamptz, created_at) AS at, payload #>> '{data,campaign}' AS campaign,
         payload #>> '{data,channel}' AS channel, coalesce((payload #>> '{data,test_mode}')::boolean, false) AS test_mode, 'task' AS kind,
         payload #>> '{data,outcome}' AS outcome, coalesce((payload #>> '{data,attempts}')::bigint, 0) AS attempts, 0 AS seconds
  FROM events WHERE type = 'task.completed'
  UNION ALL
  SELECT org_id, coalesce((payload #>> '{data,ended_at}')::timestamptz, created_at), payload #>> '{data,campaign}', payload #>> '{data,channel}',
         coalesce((payload #>> '{data,test_mode}')::boolean, false), coalesce(payload #>> '{data,direction}', 'outbound'), payload #>> '{data,outcome}', 0,
         coalesce((payload #>> '{data,duration_s}')::bigint, 0)
  FROM events WHERE type = 'interaction.finalized'
) counted
WHERE campaign IS NOT NULL AND channel IS NOT NULL AND outcome IS NOT NULL
GROUP BY 1, 2, 3, 4, 5, 6, 7;

-- A message a provider delivered is kept (against its delivering it again)
-- with the interaction it went to, and deleted with it. Those recorded before
-- this migration name none: each is kept a week from when it came (Meta
-- retries a webhook for up to seven days), found by the second index, which
-- no later row enters.
ALTER TABLE provider_messages ADD COLUMN interaction_id text;
CREATE INDEX provider_messages_by_interaction ON provider_messages (interaction_id);
CREATE INDEX provider_messages_unattached ON provider_messages (received_at) WHERE interaction_id IS NULL;

-- A contact on file goes when no trigger that named one of its ids is left:
-- its ids are found by contact. Links are written once, when an id is first
-- seen, so this costs an entry per new id, never one per trigger.
CREATE INDEX contact_ids_by_contact ON contact_ids (contact_id);

-- A suppression older than the retention period keeps only its number's
-- digest, as an erasure leaves it (it still meets the number): found among
-- the numbers still in the clear only.
CREATE INDEX suppressions_in_clear ON suppressions (org_id, created_at) WHERE phone NOT LIKE 'sha256:%';

-- The audit log is kept AUDIT_LOG_RETENTION_DAYS (by when each entry was
-- written); a suppression's entries are found by the number they name when
-- that number is kept only as its digest from then on (before, each erasure
-- read the organization's whole log).
CREATE INDEX audit_log_by_time ON audit_log (at);
CREATE INDEX audit_log_suppressions ON audit_log (org_id, target) WHERE action LIKE 'suppression.%';
