-- Each organization's rate limit on the client API (domain/rateLimit.ts):
-- its own figures, set by the operator, or the service's defaults (NULL).
ALTER TABLE organizations
  ADD COLUMN rate_limit_per_s integer CHECK (rate_limit_per_s > 0),
  ADD COLUMN rate_limit_burst integer CHECK (rate_limit_burst > 0);

-- The token bucket each organization's requests draw on, shared by every
-- API process, which leases tokens from it a few at a time (one lease every
-- tenth of a second at most, for an organization sending at its limit).
-- Unlogged: a crash loses at most the buckets' state, and a bucket lost is
-- full again, which the limit allows anyway after a second or two; its
-- writes then cost no WAL.
CREATE UNLOGGED TABLE rate_buckets (
  org_id text PRIMARY KEY,
  tokens double precision NOT NULL,
  at     timestamptz NOT NULL
);
