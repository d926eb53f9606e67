-- How many webhooks may be in flight to an endpoint at once becomes the
-- endpoint's own setting: a receiver that can take more asks for more, one
-- that cannot asks for fewer. At most 50, each a connection a deliverer keeps
-- open to it. Endpoints registered before keep the cap every endpoint had, 4.
--
-- The cap is kept by the one deliverer whose claims on the endpoint's
-- deliveries still run (see store/deliveries.ts), so it needs no column of
-- its own beside the deliveries' leases.
ALTER TABLE webhook_endpoints
  ADD COLUMN max_in_flight integer NOT NULL DEFAULT 4 CHECK (max_in_flight BETWEEN 1 AND 50);
