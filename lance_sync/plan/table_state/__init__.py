"""The planning of a dataset's own state: its columns, indexes, tags and old versions, each
compared with what the manifest declares in a module of its own, called from `Comparer`."""
