-- The attempt that settles a delivery (it succeeded, or it failed and the
-- delivery gives up) is written on the delivery's own row, in the update
-- that settles it: attempts is its number, completed_at its time, and these
-- columns its answer. delivery_attempts keeps the attempts after which the
-- delivery was due again. Nearly every delivery succeeds at its first
-- attempt, so nearly every one was a second row, with its primary key entry,
-- written beside the update that recorded it.
--
-- A delivery settled before this keeps its last attempt in delivery_attempts
-- and NULL here; one given up without an attempt (its endpoint disabled or
-- deleted) has NULL here too. final_latency_ms is NOT NULL for every attempt
-- made, and so says whether the row holds one.
ALTER TABLE deliveries
  ADD COLUMN final_status_code integer,
  ADD COLUMN final_latency_ms integer,
  ADD COLUMN final_error text;
