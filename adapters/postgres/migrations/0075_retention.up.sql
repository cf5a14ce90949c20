-- Retention (ports.Pruner, adapters/postgres/retention.go): each prune
-- finds its oldest rows through one of these indexes, a batch at a time,
-- instead of scanning the table.
CREATE INDEX events_occurred_at_idx ON events (occurred_at);
-- Only finished deliveries and forwards are ever pruned.
CREATE INDEX webhook_deliveries_finished_idx ON webhook_deliveries (created_at) WHERE status <> 'PENDING';
CREATE INDEX queue_forwards_finished_idx ON queue_forwards (updated_at) WHERE status <> 'PENDING';
-- Line changes are pruned for runs closed long enough ago.
CREATE INDEX queue_runs_closed_idx ON queue_runs (closed_at) WHERE status = 'CLOSED';
