-- Reach counts (domain/reachCounts.ts): per organization, campaign (routing
-- key and channel), test mode, the person's local date and hour of an outbound
-- attempt's start, the attempt's number and its outcome, how many attempts
-- and the seconds they lasted; of those that reached the person, also the
-- bucket of time from the trigger to their start (delay_bucket, 0 for the
-- others) and those seconds in all. What the reach statistics read; it
-- outlives the history, as daily_counts does. The key's weekday is the local
-- date's. A year of one campaign calling 12 hours a day, 3 attempts, 4
-- outcomes is about 50,000 rows.
CREATE TABLE reach_counts (
  org_id       text NOT NULL,
  campaign     text NOT NULL,
  channel      text NOT NULL,
  test_mode    boolean NOT NULL,
  local_date   date NOT NULL,
  hour         smallint NOT NULL CHECK (hour BETWEEN 0 AND 23),
  attempt      integer NOT NULL CHECK (attempt >= 1),
  outcome      text NOT NULL,
  delay_bucket smallint NOT NULL,
  count        bigint NOT NULL,
  seconds      bigint NOT NULL,
  delay_s      bigint NOT NULL,
  PRIMARY KEY (org_id, campaign, channel, test_mode, local_date, hour, attempt, outcome, delay_bucket)
);

-- As daily_count_changes: each statement that writes events adds here, in
-- rows of its own, and the history sweep moves them into reach_counts.
CREATE TABLE reach_count_changes (LIKE reach_counts);

-- What was attempted before this migration, from the interactions still kept:
-- their start in the zone their task's schedule is read in first, where this
-- server's zone data knows it (Node's may be newer: a zone it does not know
-- would stop the migration).
INSERT INTO reach_counts (org_id, campaign, channel, test_mode, local_date, hour, attempt, outcome, delay_bucket, count, seconds, delay_s)
SELECT org_id, campaign, channel, test_mode, local_start::date, extract(hour FROM local_start)::smallint, attempt, outcome,
       CASE WHEN outcome NOT IN ('completed', 'replied') THEN 0
            WHEN delay_s <= 300 THEN 1 WHEN delay_s <= 3600 THEN 2 WHEN delay_s <= 14400 THEN 3 WHEN delay_s <= 86400 THEN 4
            WHEN delay_s <= 259200 THEN 5 WHEN delay_s <= 604800 THEN 6 ELSE 7 END,
       count(*), sum(seconds),
       sum(CASE WHEN outcome IN ('completed', 'replied') THEN delay_s ELSE 0 END)
FROM (
  -- How long it lasted as its event says (domain/interactionDuration.ts): the provider's figure, else its end less its start.
  SELECT i.org_id, ic.routing_key AS campaign, i.channel, i.test_mode, i.attempt, i.outcome,
         coalesce(i.duration_s, greatest(0, round(extract(epoch FROM i.ended_at - i.started_at)))::bigint, 0) AS seconds,
         i.started_at AT TIME ZONE z.zone AS local_start,
         greatest(0, round(extract(epoch FROM i.started_at - tr.created_at)))::bigint AS delay_s
  FROM interactions i
  JOIN campaigns ic ON ic.id = i.campaign_id
  JOIN tasks t ON t.id = i.task_id
  JOIN triggers tr ON tr.id = t.trigger_id
  JOIN campaigns tc ON tc.id = t.campaign_id
  CROSS JOIN LATERAL (
    SELECT CASE WHEN tc.schedule->>'timezone' = 'contact' THEN coalesce(t.timezones[1], tc.schedule->>'fallback_timezone')
                ELSE tc.schedule->>'timezone' END AS zone
  ) z
  WHERE i.status = 'finalized' AND i.direction = 'outbound' AND i.attempt >= 1 AND i.outcome IS NOT NULL
    AND z.zone IN (SELECT name FROM pg_timezone_names)
) attempted
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9;
