-- Conversations: what an interaction's conversation reports (its result), what
-- the person wrote (a WhatsApp exchange's replies), how an answered call was
-- handed to its conversation, and a campaign's wait for results.

-- result: the conversation's result as reported (domain/conversationResult.ts),
-- NULL until one comes. replies: the person's messages, as transcript turns,
-- recorded as they came. handoff: the answer route's record of the handoff (its
-- mode, when, and the context keys left out). All NULL on most rows, which
-- costs them nothing; a large result is TOASTed, and the updates that follow it
-- (none but an erasure) copy its pointer, not its bytes.
ALTER TABLE interactions
  ADD COLUMN result  jsonb,
  ADD COLUMN replies jsonb,
  ADD COLUMN handoff jsonb;

-- ended: the provider's final word came (a call completed, a reply arrived) and
-- the campaign waits up to results.wait_s for the result before the interaction
-- is finalized and reported; settle_at is then when the wait ends. Such an
-- interaction is still in the running index, so that the settlement finds it
-- when its wait ends, but no longer counts towards max_concurrent.
ALTER TABLE interactions DROP CONSTRAINT interactions_status_check;
ALTER TABLE interactions ADD CONSTRAINT interactions_status_check CHECK (status IN ('starting', 'active', 'ended', 'finalized'));

ALTER TABLE campaigns ADD COLUMN results jsonb NOT NULL DEFAULT '{"wait_s": 0}';

-- interaction.result_added: a result that came after its interaction's
-- interaction.finalized had been written (without one).
ALTER TABLE events DROP CONSTRAINT events_type_check;
ALTER TABLE events ADD CONSTRAINT events_type_check
  CHECK (type IN ('task.completed', 'interaction.finalized', 'interaction.result_added', 'webhook.test'));

-- conversation: the person asked in the conversation not to be contacted (a result's opt_out).
ALTER TABLE suppressions DROP CONSTRAINT suppressions_reason_check;
ALTER TABLE suppressions ADD CONSTRAINT suppressions_reason_check CHECK (reason IN ('manual', 'reply', 'provider', 'conversation'));

-- The events of an interaction that answers no task (a message from a person),
-- for an erasure to find by interaction: their results hold what the person
-- wrote. Events of tasks are found by task (events_by_task, 022); only these
-- take an entry here.
CREATE INDEX events_of_taskless_interactions ON events ((payload #>> '{data,interaction_id}'))
  WHERE payload #>> '{data,task_id}' IS NULL AND payload #>> '{data,interaction_id}' IS NOT NULL;

-- A result makes an interaction and the events that report it kilobytes of
-- JSON each (a 20-turn transcript, about 4.4 kB), compressed as they are
-- TOASTed; so does a simulated conversation's result in the provider_config
-- each interaction keeps. lz4 compresses them in 15 µs where pglz took 37
-- (PostgreSQL 15, 20,000 rows of an interaction.finalized with a result), to
-- the same size within 3 %. A server built without lz4, and PGlite, keep pglz.
DO $$
BEGIN
  ALTER TABLE events ALTER COLUMN payload SET COMPRESSION lz4;
  ALTER TABLE interactions ALTER COLUMN result SET COMPRESSION lz4;
  ALTER TABLE interactions ALTER COLUMN provider_config SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
  NULL;
END $$;
