-- Sources: the systems an organization's external ids come from, with their
-- rules. An organization with none accepts any source and type.
CREATE TABLE sources (
  org_id           text NOT NULL REFERENCES organizations (id),
  -- Lowercased, as trigger ids are.
  name             text NOT NULL,
  id_types         text[] NOT NULL,
  -- optional: a trigger may leave `contact` out when one of its ids of this
  -- source names a known contact.
  contact          text NOT NULL CHECK (contact IN ('required', 'optional')),
  required_context text[] NOT NULL,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  PRIMARY KEY (org_id, name)
);
