-- Merges jsonb objects in the aggregate's order, later keys winning, as a
-- chain of || would. The group commit merges the contact fields of several
-- triggers for one person with it, whole objects at a time.
CREATE AGGREGATE jsonb_merge_agg(jsonb) (SFUNC = jsonb_concat, STYPE = jsonb, INITCOND = '{}');
