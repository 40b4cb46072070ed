"""`python -m lance_sync` runs the CLI."""

from lance_sync.cli import main

main(prog_name="lance-sync")
