-- ANALYZE samples every column of a table: autovacuum's, and the service's
-- own where no autovacuum runs (store/statistics.ts). These columns hold
-- documents (event payloads, contacts, contexts, settings, stored answers)
-- that no query filters or sorts on by their whole value, so their
-- statistics would never be read, and comparing thousands of them was most
-- of an ANALYZE's time: of events, 20,000 rows, 121 to 132 ms with the
-- payload's statistics, 16 to 61 ms without. A trigger's ids keep theirs:
-- the lookups by a client's id read them.
ALTER TABLE events ALTER COLUMN payload SET STATISTICS 0;
ALTER TABLE triggers ALTER COLUMN contact SET STATISTICS 0, ALTER COLUMN context SET STATISTICS 0;
ALTER TABLE tasks ALTER COLUMN contact SET STATISTICS 0, ALTER COLUMN context SET STATISTICS 0;
ALTER TABLE contacts ALTER COLUMN fields SET STATISTICS 0;
ALTER TABLE interactions ALTER COLUMN provider_config SET STATISTICS 0;
ALTER TABLE idempotency_keys ALTER COLUMN response SET STATISTICS 0;
