-- Two entries fewer in interactions' indexes for every interaction written.
--
-- interactions_provider_ref (provider, provider_ref): an interaction is
-- written before its provider is asked, so with no reference yet, and the
-- index took an entry for that NULL, which no lookup reads. Only references
-- are indexed now; a lookup by one (provider_ref = $2) implies it is not
-- NULL, so the planner still takes the index.
CREATE UNIQUE INDEX interactions_by_provider_ref ON interactions (provider, provider_ref) WHERE provider_ref IS NOT NULL;
DROP INDEX interactions_provider_ref;
ALTER INDEX interactions_by_provider_ref RENAME TO interactions_provider_ref;

-- interactions_running_by_campaign (campaign_id) and interactions_to_settle
-- (settle_at), both of running interactions, become one: a campaign's count
-- of running interactions reads its range, and the next to settle is the
-- least of each campaign's first, as for due tasks (013).
CREATE INDEX interactions_running ON interactions (campaign_id, settle_at) WHERE status <> 'finalized';
DROP INDEX interactions_running_by_campaign;
DROP INDEX interactions_to_settle;
