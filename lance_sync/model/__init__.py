"""The vocabulary every stage shares, importing nothing above it: the desired state a manifest
declares, plan actions, policy rules, the marks lance-sync leaves in catalogs, locations,
variables, Arrow type names, backend configuration, errors and shared defaults."""
