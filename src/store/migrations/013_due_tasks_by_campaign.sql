-- Due tasks are claimed campaign by campaign: a campaign at its
-- max_concurrent may have any number of tasks due, and a claim that walked
-- one index of every due task in due order would read past all of them on
-- each round before reaching another campaign's task. Keyed by campaign, the
-- claim reads only the ranges of the campaigns it takes from, and the next
-- due time is the least of each campaign's first entry. It replaces the
-- index by due time alone, so a trigger still writes one index entry for
-- its task's due time.
CREATE INDEX tasks_due_by_campaign ON tasks (campaign_id, due_at) WHERE status = 'pending';
DROP INDEX tasks_due;
