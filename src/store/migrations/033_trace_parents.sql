-- The W3C traceparent of the request that recorded a trigger, and a copy on
-- each event of its task, so that the provider calls and webhook deliveries
-- that follow, in whatever process and however much later, are spans of the
-- trigger's trace (src/tracing.ts). NULL, and so no bytes in a row, unless
-- traces are on.
ALTER TABLE triggers ADD COLUMN trace_parent text;
ALTER TABLE events ADD COLUMN trace_parent text;
