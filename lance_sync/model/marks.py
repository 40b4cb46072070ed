"""The properties lance-sync writes on the objects it manages, and how it reads them back.

Without a state file, what lance-sync knows about an object after its manifest entry is
gone lives on the object itself: who owns it, whether it is protected, and whether its data
goes with it when it leaves the manifest.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping

OWNER_KEY = "lance_sync.owner"
#: the same key in a Lance dataset's schema metadata: the owner whose apply created the dataset,
#: written in the commit that creates it. lance-sync deletes or rewrites only datasets that carry
#: its owner's record (a catalog property alone, which anyone with catalog write access can set,
#: never decides that data is deleted).
DATASET_OWNER_KEY = OWNER_KEY
PROTECT_KEY = "lance_sync.protect"
ON_REMOVE_KEY = "lance_sync.on_remove"
MANAGED_KEYS = (OWNER_KEY, PROTECT_KEY, ON_REMOVE_KEY)
#: the principals whose grants lance-sync manages on an object (a JSON list): a principal that
#: leaves the manifest is revoked only where this records it. Never compared as a property: the
#: grants planner keeps it (lance_sync.plan.grants); a backend may keep it elsewhere than on the
#: object itself (`SyncNamespace.grants_record_place`), under this key and a suffix
GRANTS_KEY = "lance_sync.grants"
#: every key under this prefix is lance-sync's; manifests cannot set them
RESERVED_PREFIX = "lance_sync."

#: the names of lance-sync's apply leases (lance_sync.apply.lease), which every stage skips
LEASE_PREFIX = "lance_sync_lease_"

#: the property that tells a Lance table from other tables of a catalog (every spec)
TABLE_TYPE_KEY = "table_type"
LANCE_TABLE_TYPE = "lance"


def marks(owner: str, protect: bool = False, on_remove: str | None = None) -> dict[str, str]:
    """lance-sync's own properties for an object it manages."""
    stamped = {OWNER_KEY: owner}
    if protect:
        stamped[PROTECT_KEY] = "true"
    if on_remove == "drop":
        stamped[ON_REMOVE_KEY] = "drop"
    return stamped


def owner_of(properties: Mapping[str, str]) -> str | None:
    return properties.get(OWNER_KEY)


def grants_record(value: str | None) -> frozenset[str] | None:
    """The principals a `GRANTS_KEY` value records; None for no record (or one that cannot be
    read: an object without a record keeps the behaviour from before records)."""
    if value is None:
        return None
    try:
        principals = json.loads(value)
    except ValueError:
        return None
    if not isinstance(principals, list) or not all(isinstance(p, str) for p in principals):
        return None
    return frozenset(principals)


def grants_record_value(principals: Collection[str]) -> str:
    return json.dumps(sorted(principals), ensure_ascii=False, separators=(",", ":"))


def is_protected(properties: Mapping[str, str]) -> bool:
    return str(properties.get(PROTECT_KEY, "")).lower() == "true"


def drops_data(properties: Mapping[str, str]) -> bool:
    return properties.get(ON_REMOVE_KEY) == "drop"


def dataset_owner(schema_metadata: Mapping[bytes, bytes] | None) -> str | None:
    """The owner recorded in a Lance dataset's schema metadata, or None."""
    value = (schema_metadata or {}).get(DATASET_OWNER_KEY.encode())
    return value.decode("utf-8", errors="replace") if value is not None else None


def describe_dataset_owner(recorded: str | None) -> str:
    """What a dataset says of its creator: "records owner 'x'" or that it carries no record."""
    return f"records owner '{recorded}'" if recorded else "carries no lance-sync owner record"


def is_lance_table(properties: Mapping[str, str]) -> bool:
    """The specs' test of the table-type marker: `table_type=lance` in any case."""
    return str(properties.get(TABLE_TYPE_KEY, "")).lower() == LANCE_TABLE_TYPE


def lance_table_properties(properties: Mapping[str, str] | None) -> dict[str, str]:
    """`properties` with the table-type marker that makes a catalog's table a Lance table."""
    return {**(properties or {}), TABLE_TYPE_KEY: LANCE_TABLE_TYPE}


def unmanaged(properties: Mapping[str, str]) -> dict[str, str]:
    """Properties without lance-sync's marks, grants records and the table-type marker: what a
    user declared."""
    return {k: v for k, v in properties.items()
            if k not in MANAGED_KEYS and k != TABLE_TYPE_KEY and not k.startswith(GRANTS_KEY)}


def is_lease_namespace(id: tuple[str, ...]) -> bool:
    """Leases (and claims on them) are lance-sync's bookkeeping: never planned, listed or adopted."""
    return bool(id) and id[-1].startswith(LEASE_PREFIX)
