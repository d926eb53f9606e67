-- The pipeline's hot tables lose their foreign keys, as the trigger path's
-- did (009): every row inserted into interactions, events, deliveries and
-- delivery_attempts was checked against its parents and took a KEY SHARE
-- lock on each, and those parents are few and shared (one organization, one
-- campaign, one webhook endpoint for thousands of rows), so concurrent
-- batches queued on the same rows' lock words. The referenced rows are never
-- deleted (organizations, campaigns, tasks, events, deliveries; endpoints
-- are soft-deleted), and each child row is written by the statement that
-- has just read or written its parents.
ALTER TABLE interactions DROP CONSTRAINT interactions_org_id_fkey;
ALTER TABLE interactions DROP CONSTRAINT interactions_task_id_fkey;
ALTER TABLE interactions DROP CONSTRAINT interactions_campaign_id_fkey;
ALTER TABLE events DROP CONSTRAINT events_org_id_fkey;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_event_id_fkey;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_endpoint_id_fkey;
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_delivery_id_fkey;
