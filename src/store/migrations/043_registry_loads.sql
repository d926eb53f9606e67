-- A registry load in progress: its generation is taken and recorded here
-- before its numbers are copied, and the row goes in the transaction that
-- puts the generation in force (or when the load gives up). A generation of
-- registry_numbers that no registry names and no load started within a day
-- holds is abandoned (its load's process was killed, or killed while it
-- deleted the generation it replaced): the history sweep deletes its numbers
-- (services/history.ts).
CREATE TABLE registry_loads (
  generation bigint PRIMARY KEY,
  started_at timestamptz NOT NULL
);
