-- contacts is written by the group commit, like the trigger tables, and so
-- carries no foreign key either (see 001): its check locked the organization's
-- row (FOR KEY SHARE) from every concurrent batch that created a contact.
-- Organizations are never deleted, and a contact is only ever created for the
-- organization of the key that sent its trigger, checked in the same statement.
ALTER TABLE contacts DROP CONSTRAINT contacts_org_id_fkey;
