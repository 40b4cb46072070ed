"""The `lance-sync` command line; every command that talks to a catalog goes through lance_sync.api."""

from lance_sync.cli.app import main, run

__all__ = ["main", "run"]
