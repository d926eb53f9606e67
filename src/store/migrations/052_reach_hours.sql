-- Reach by the hour of the week (domain/learnedTiming.ts): per organization
-- and campaign (routing key and channel), the outbound attempts made in each
-- local hour of the week (0: Monday 00:00-00:59, 167: Sunday 23:00-23:59)
-- and how many reached the person, since the campaign began; test mode
-- left out. What learned retry timing reads: at most 168 rows a campaign,
-- where reach_counts holds a row per local date. Kept by the history sweep
-- as it moves reach_count_changes into reach_counts, so that the two never
-- disagree.
CREATE TABLE reach_hours (
  org_id       text NOT NULL,
  campaign     text NOT NULL,
  channel      text NOT NULL,
  hour_of_week smallint NOT NULL CHECK (hour_of_week BETWEEN 0 AND 167),
  attempts     bigint NOT NULL,
  reached      bigint NOT NULL,
  PRIMARY KEY (org_id, campaign, channel, hour_of_week)
);

INSERT INTO reach_hours (org_id, campaign, channel, hour_of_week, attempts, reached)
SELECT org_id, campaign, channel, ((extract(isodow FROM local_date)::int - 1) * 24 + hour)::smallint,
       sum(count), sum(CASE WHEN outcome IN ('completed', 'replied') THEN count ELSE 0 END)
FROM reach_counts
WHERE NOT test_mode
GROUP BY 1, 2, 3, 4;
