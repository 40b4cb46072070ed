"""What the tests share, and nothing else: a test module imports helpers from here (or from
tests/servers for the servers, tests/conformance/harness*.py for the conformance harnesses),
never from another test module.

- lanes: the quick and slow lanes, by rule (a pytest plugin, loaded by tests/conftest.py)
- cli: running lance-sync in this process, or as a process where that is what a test proves
- catalogs: manifest entries per backend, and each catalog read back with its own client
- project: the quickstart in a folder of its own
- grants, reconcile, processes, manifests: helpers of more than one test module
"""
