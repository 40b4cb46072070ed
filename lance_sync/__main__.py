"""`python -m lance_sync` runs the CLI."""

from lance_sync.cli.app import main

main(prog_name="lance-sync")
