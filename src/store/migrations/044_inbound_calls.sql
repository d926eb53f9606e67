-- Calls back (services/inboundCalls.ts): a call to a campaign's number from a
-- person with an open task of the organization, or one completed within this
-- many days, lands on that task. 0: open tasks only.
ALTER TABLE organizations
  ADD COLUMN callback_window_days integer NOT NULL DEFAULT 14 CHECK (callback_window_days BETWEEN 0 AND 365);
