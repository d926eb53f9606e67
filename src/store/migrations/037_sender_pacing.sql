-- Pacing per sender (domain/pacing.ts). Each sender's next free slot, and
-- when the last of its tasks told to wait comes back, shared by every worker
-- process on the database: a batch that starts a paced sender's attempts
-- locks its row and moves them on. A row per sender a campaign ever started
-- from (a WhatsApp number, a Twilio account): a few. Epoch milliseconds
-- with their fractions, since a fast pace's slots are microseconds apart.
CREATE TABLE IF NOT EXISTS sender_paces (
  sender        text PRIMARY KEY,
  next_slot_ms  double precision NOT NULL,
  held_until_ms double precision NOT NULL
);

-- A campaign's own pace for its sender, over its provider's documented rate:
-- {"per_second": n}, or {} for the provider's.
ALTER TABLE campaigns ADD COLUMN IF NOT EXISTS pacing jsonb NOT NULL DEFAULT '{}';

-- Why a pending task waits past its due time, when it is not its schedule or
-- its attempts' delays: 'sender' while its sender's pace holds it. Null when
-- it is started or postponed for anything else. No index: read with the task.
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS held_by text;
