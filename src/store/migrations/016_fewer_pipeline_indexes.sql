-- Two indexes that every event and every delivery paid for and no query
-- needs. Each delivery's row is written three times (made pending, claimed,
-- recorded), none of them a HOT update, so each index on deliveries costs a
-- new entry at every step.
--
-- events_org (org_id, id): an event is found by its id alone (the primary
-- key), and an organization's events are listed in commit order through
-- events_org_txid.
DROP INDEX events_org;
-- deliveries_due (due_at), pending only: deliveries are claimed endpoint by
-- endpoint through deliveries_pending_by_endpoint (endpoint_id, due_at), and
-- the next due time is the least of each endpoint's first entry, as for
-- tasks (013).
DROP INDEX deliveries_due;
