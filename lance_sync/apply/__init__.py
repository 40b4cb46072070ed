"""Changing catalogs: one apply session (session) takes the leases (lease), gets the plan, runs
the guards against live state (guards, live) and carries the plan out (execute: options, the
scheduler, the action runner, the journal, the rollback plan, the report); the reconcile loop
(reconcile) runs the same session unattended."""
