-- Opt-out: the phone numbers an organization must never contact again, on any
-- channel. Checked by the dispatcher before every attempt.
CREATE TABLE suppressions (
  org_id     text NOT NULL REFERENCES organizations (id),
  phone      text NOT NULL,
  -- manual (the API), reply (the person wrote STOP), provider (the provider said they opted out).
  reason     text NOT NULL CHECK (reason IN ('manual', 'reply', 'provider')),
  created_at timestamptz NOT NULL,
  PRIMARY KEY (org_id, phone)
);
