"""Changing catalogs: leases (lease), guards against live state (guards, live), carrying a plan
out (execute: options, the scheduler, the action runner, the journal, the rollback plan, the
report), and the reconcile loop that applies unattended (reconcile)."""
