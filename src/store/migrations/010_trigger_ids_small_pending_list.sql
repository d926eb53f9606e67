-- The index on triggers.ids (tasks found by a client's id) keeps GIN's pending
-- list, which makes each insert cheap, but a small one (64 kB, the least
-- allowed, instead of gin_pending_list_limit's 4 MB). The insert that fills
-- the list merges all of it into the index in the foreground, unless a vacuum
-- got there first: with 4 MB, that was one group commit in about 25,000
-- taking 50 to 110 ms, and every request of the batch and those queued behind
-- it with it. 64 kB merges often and briefly, for about 2 % more database time
-- per trigger; entries inserted one at a time (fastupdate = off) would cost
-- about 20 % more. Searches, which read the whole pending list, get faster too.
ALTER INDEX triggers_ids SET (gin_pending_list_limit = 64);
