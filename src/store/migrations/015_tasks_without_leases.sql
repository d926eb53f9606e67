-- A dispatcher now takes due tasks inside the transaction that records what
-- it decided (FOR UPDATE SKIP LOCKED, then the attempts, then COMMIT), so no
-- claim outlives a transaction: a dispatcher that dies holds nothing, and
-- each task is written once per dispatch rather than once to claim it and
-- once more to start it (the claim's write moved due_at, a new entry in
-- every index of the table, for each task dispatched).
ALTER TABLE tasks DROP COLUMN locked_by, DROP COLUMN locked_until;
