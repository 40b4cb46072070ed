#!/usr/bin/env python3
"""Which lance-sync extras the GitHub Action installs when its `extras` input is `auto`.

Run by action.yml after lance-sync itself (without extras) is installed, in the action's
`working-directory`, with the same LANCE_SYNC_* variables as scripts/ci_action.py; prints the
extras, comma separated (an empty line for none):

- `glue` for a glue backend, `hive` for a hive3 backend; dir, unity and iceberg need none;
- `spark` only when this run applies (mode apply, or auto on a push to the default branch)
  AND a table has a `source:` (Spark writes it); `connect` instead when the Spark master
  (`spark.master` of the manifests, or `--spark` in the `args` input) starts with sc://.
  A plan never starts Spark, so a pull request never installs pyspark.

The manifests are read with lance-sync's own loader (overlays merged in order, `${VAR}` left
as written when the variable is unset, as on a fork's pull request); nothing else is checked
and nothing leaves the machine. A manifest that cannot be read gets no extras and a warning:
the validate step that follows says what is wrong with it.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ci_action import GitHub, Settings, masking, register_secret_variables, resolved_mode

from lance_sync.model.engines import CONNECT_SCHEME

#: the extra each backend type needs (types not listed need none)
BACKEND_EXTRAS = {"glue": "glue", "hive3": "hive"}


def extras_for(manifest: Mapping[str, Any], applies: bool, spark_master: str | None = None) -> list[str]:
    """The extras a run needs for `manifest` (merged data); `spark_master` overrides the
    manifest's spark.master."""
    backends = manifest.get("backends") or {}
    types = {str(backend.get("type")) for backend in backends.values() if isinstance(backend, Mapping)}
    extras = {BACKEND_EXTRAS[t] for t in types if t in BACKEND_EXTRAS}
    tables = manifest.get("tables") or []
    if applies and any(isinstance(table, Mapping) and table.get("source") for table in tables):
        if spark_master is None:
            spark = manifest.get("spark")
            spark_master = str(spark.get("master") or "") if isinstance(spark, Mapping) else ""
        extras.add("connect" if spark_master.startswith(CONNECT_SCHEME) else "spark")
    return sorted(extras)


def spark_option(args: Sequence[str]) -> str | None:
    """The value of `--spark` in the action's `args` input, if given."""
    for i, arg in enumerate(args):
        if arg == "--spark" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--spark="):
            return arg.split("=", 1)[1]
    return None


def read_manifests(paths: Sequence[str], environ: Mapping[str, str]) -> dict[str, Any]:
    """The manifests' data, overlays merged in order, unset variables kept as written."""
    from lance_sync.manifest.loader import load_document
    from lance_sync.manifest.merge import merge_documents

    merged = merge_documents([load_document(path, environ, allow_unset=True) for path in paths])
    return merged.data if isinstance(merged.data, dict) else {}


def main(environ: Mapping[str, str]) -> int:
    register_secret_variables(dict(environ))
    settings = Settings.from_environment(dict(environ))
    applies = resolved_mode(settings, GitHub(dict(environ))) == "apply"
    try:
        manifest = read_manifests(settings.files, environ)
    except Exception as error:  # noqa: BLE001 - any problem: validate, the next step, reports it
        print(masking.mask(f"::warning::installing no extras: could not read {shlex.join(settings.files)} "
                           f"({error})"), file=sys.stderr)
        manifest = {}
    print(",".join(extras_for(manifest, applies, spark_option(settings.extra_args))))
    return 0


if __name__ == "__main__":
    sys.exit(main(os.environ))
