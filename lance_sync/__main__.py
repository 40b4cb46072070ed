"""`python -m lance_sync` runs the CLI."""

from lance_sync.cli.app import run

run()
