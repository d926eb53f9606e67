-- Do-not-call registries (the US National DNC Registry, a state's list, the
-- UK's TPS, an organization's own): a number listed is blocked for the
-- purposes the registry covers unless a consent of a kind that overrides it
-- is on file (domain/contactability.ts). A registry holds millions of
-- numbers, each kept only as the first 8 bytes of its keyed digest (SHA-256
-- of the service's phone hash key and the E.164 number, store/registries.ts):
-- 8 bytes a number, where the digest as text would take 71, and a false
-- match about once in 2^64 / 10^7 lookups of a 10-million-number list.
-- org_id NULL: a registry of the whole service, for every organization.
CREATE TABLE registries (
  id            text PRIMARY KEY,
  org_id        text,
  name          text NOT NULL,
  purposes      text[] NOT NULL,
  overridden_by text[] NOT NULL,
  -- The list's own date (the download's), as its publisher gives it.
  list_date     date NOT NULL,
  -- The numbers in force: a reload copies a new generation, then swaps this
  -- in one statement, so that a lookup sees the old list or the new, whole.
  generation    bigint NOT NULL,
  numbers       bigint NOT NULL,
  loaded_at     timestamptz NOT NULL,
  created_at    timestamptz NOT NULL
);
CREATE UNIQUE INDEX registries_name ON registries (coalesce(org_id, ''), name);

CREATE SEQUENCE registry_generations;

-- Loaded in digest order, so that the primary key is built at its right edge.
CREATE TABLE registry_numbers (
  generation bigint NOT NULL,
  digest     bigint NOT NULL,
  PRIMARY KEY (generation, digest)
);
