-- Calls back (services/inboundCalls.ts): a call to a campaign's number from a
-- person with an open task of the organization, or one completed within this
-- many days, lands on that task. 0: open tasks only.
ALTER TABLE organizations
  ADD COLUMN callback_window_days integer NOT NULL DEFAULT 14 CHECK (callback_window_days BETWEEN 0 AND 365);

-- A task held while the person's call back runs (held_by 'callback') is due
-- again, if the call back does not complete it, when it was before: kept
-- here while the hold's own due time (the call's settle time) stands in
-- due_at.
ALTER TABLE tasks ADD COLUMN callback_resume_at timestamptz;
