-- Session messages (docs/messaging.md): what the client sends the person
-- through POST /api/v2/interactions/{id}/messages while WhatsApp's customer
-- service window is open, kept and deleted with the interaction they answer.
-- `content` is what was sent (text, buttons or a list), NULL once the person
-- is erased; `provider_message_id` WhatsApp's wamid once it took the message,
-- by which its statuses come back. `status`: sending (handed to WhatsApp, no
-- answer yet), accepted, sent, delivered, read, failed, or unknown (WhatsApp
-- gave no answer: whether it was sent is not known, and it is not sent again).
-- `idempotency_key` makes a repeated request answer the first one's message.
CREATE TABLE session_messages (
  id text PRIMARY KEY,
  org_id text NOT NULL REFERENCES organizations (id),
  interaction_id text NOT NULL REFERENCES interactions (id) ON DELETE CASCADE,
  provider text NOT NULL,
  provider_message_id text,
  content jsonb,
  status text NOT NULL CHECK (status IN ('sending', 'accepted', 'sent', 'delivered', 'read', 'failed', 'unknown')),
  error text,
  idempotency_key text,
  request_hash bytea,
  created_at timestamptz NOT NULL,
  status_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX session_messages_by_provider_id ON session_messages (provider, provider_message_id) WHERE provider_message_id IS NOT NULL;
CREATE INDEX session_messages_of_interaction ON session_messages (interaction_id, id);
CREATE UNIQUE INDEX session_messages_by_key ON session_messages (org_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
-- The messages still waiting for WhatsApp's answer: a status that names no
-- message yet may be one of theirs, come before the answer (store/sessionMessages.ts).
CREATE INDEX session_messages_sending ON session_messages (interaction_id) WHERE status = 'sending';
