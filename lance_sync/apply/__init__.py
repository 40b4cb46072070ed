"""Changing catalogs: leases, guards against live state, the executor and its journal, rollback,
and the reconcile loop that applies unattended."""
