"""Lance ids and properties as the metastore's objects and arguments, and back.

A Lance table is an EXTERNAL_TABLE with the parameter `table_type=lance` and a minimal
storage descriptor; a database's and a catalog's fields are namespace properties of their
own (`DATABASE_FIELDS`, `CATALOG_FIELDS`), next to a database's parameters. Databases of the
default catalog `hive` are named unprefixed, others `@catalog#database` (`database_ref`).
"""

from __future__ import annotations

from collections.abc import Sequence

from lance_namespace.errors import InvalidInputError
from pymetastore.hive_metastore.ttypes import (
    Catalog,
    Database,
    PrincipalType,
    SerDeInfo,
    StorageDescriptor,
    Table,
)

from lance_sync.drivers.base import Identifier, TableInfo
from lance_sync.drivers.hive3.config import Hive3Rules
from lance_sync.drivers.support.locations import catalog_url
from lance_sync.model.locations import normalize_location
from lance_sync.model.marks import LANCE_TABLE_TYPE, TABLE_TYPE_KEY, is_lance_table

DEFAULT_CATALOG = "hive"
DEFAULT_DATABASE = "default"
EXTERNAL_TABLE = "EXTERNAL_TABLE"
#: without EXTERNAL=TRUE, HMS stores an EXTERNAL_TABLE as MANAGED_TABLE (whose drop deletes data)
EXTERNAL_KEY = "EXTERNAL"
LANCE_TABLE_PARAMETERS = {EXTERNAL_KEY: "TRUE", TABLE_TYPE_KEY: LANCE_TABLE_TYPE}
#: table parameters HMS maintains itself; kept on the table, hidden from Lance properties
METASTORE_TABLE_PARAMETERS = frozenset({
    EXTERNAL_KEY, "transient_lastDdlTime", "numFiles", "numFilesErasureCoded", "totalSize",
    "numRows", "rawDataSize", "COLUMN_STATS_ACCURATE", "last_modified_by", "last_modified_time",
})

# Namespace properties that map to fields of the Database and Catalog objects (the spec's
# names for databases; lance-sync's, in the same style, for catalogs).
DATABASE_DESCRIPTION = "database.description"
DATABASE_LOCATION = "database.location-uri"
DATABASE_OWNER = "database.owner"
DATABASE_OWNER_TYPE = "database.owner-type"
DATABASE_FIELDS: tuple[str, ...] = (DATABASE_DESCRIPTION, DATABASE_LOCATION, DATABASE_OWNER, DATABASE_OWNER_TYPE)
CATALOG_DESCRIPTION = "catalog.description"
CATALOG_LOCATION = "catalog.location-uri"
CATALOG_FIELDS: tuple[str, ...] = (CATALOG_DESCRIPTION, CATALOG_LOCATION)

#: where catalogs created without a location go, below `root`
CATALOGS_DIRECTORY = "_catalogs"


def id_parts(id: list[str] | tuple[str, ...] | None, what: str, low: int, high: int) -> tuple[str, ...]:
    parts = tuple(id or ())
    if not low <= len(parts) <= high:
        expected = str(low) if low == high else f"{low} to {high}"
        raise InvalidInputError(f"hive3: a {what} id has {expected} level(s) (catalog$database$table); "
                                f"got {display(parts) or '(root)'}")
    for name in parts:
        # HMS 3 reads a database name '@cat#db' as database db of catalog cat
        if not name or name.startswith("@"):
            raise InvalidInputError(f"hive3: invalid name {name!r} in {display(parts)}")
    return parts


def display(parts: Sequence[str] | None) -> str:
    return Hive3Rules.format_identifier(tuple(parts or ()))


def is_default_catalog(catalog: str) -> bool:
    return catalog.lower() == DEFAULT_CATALOG


def database_ref(catalog: str, database: str) -> str:
    """A database-name argument: unprefixed in the default catalog (also understood by HMS 2.x)."""
    return database if is_default_catalog(catalog) else f"@{catalog}#{database}"


def table_location(table: Table) -> str | None:
    return normalize_location(table.sd.location) if table.sd and table.sd.location else None


def principal_type(value: str | None) -> int | None:
    if value is None:
        return None
    owner_type = PrincipalType._NAMES_TO_VALUES.get(value.upper())
    if owner_type is None:
        raise InvalidInputError(f"hive3: {DATABASE_OWNER_TYPE} must be one of "
                                f"{', '.join(PrincipalType._NAMES_TO_VALUES)} (got {value!r})")
    return owner_type


def database_properties(database: Database) -> dict[str, str]:
    properties = dict(database.parameters or {})
    fields = {
        DATABASE_DESCRIPTION: database.description,
        DATABASE_LOCATION: normalize_location(database.locationUri) if database.locationUri else None,
        DATABASE_OWNER: database.ownerName,
        DATABASE_OWNER_TYPE: PrincipalType._VALUES_TO_NAMES.get(database.ownerType)
        if database.ownerName else None,
    }
    properties.update({k: v for k, v in fields.items() if v})
    return properties


def catalog_properties(catalog: Catalog | None) -> dict[str, str]:
    if catalog is None:
        return {}
    fields = {CATALOG_DESCRIPTION: catalog.description,
              CATALOG_LOCATION: normalize_location(catalog.locationUri) if catalog.locationUri else None}
    return {k: v for k, v in fields.items() if v}


def check_catalog_properties(properties: dict[str, str]) -> None:
    unknown = sorted(set(properties) - set(CATALOG_FIELDS))
    if unknown:
        raise InvalidInputError(f"hive3: a Hive catalog has no property map, only "
                                f"{' and '.join(CATALOG_FIELDS)}; cannot store {', '.join(unknown)}")


def new_lance_table(catalog: str, database: str, name: str, location: str,
                 properties: dict[str, str]) -> Table:
    """An EXTERNAL_TABLE marked as Lance, with a minimal storage descriptor (no columns)."""
    return Table(
        tableName=name, dbName=database, catName=catalog, tableType=EXTERNAL_TABLE,
        partitionKeys=[], parameters={**properties, **LANCE_TABLE_PARAMETERS},
        sd=StorageDescriptor(cols=[], location=catalog_url(location), compressed=False,
                             numBuckets=-1, serdeInfo=SerDeInfo(name=name, parameters={}),
                             bucketCols=[], sortCols=[], parameters={}))


def is_lance(table: Table) -> bool:
    """The spec's test: EXTERNAL_TABLE with parameter table_type=lance (any case)."""
    return (table.tableType == EXTERNAL_TABLE
            and is_lance_table(table.parameters or {}))


def lance_properties(table: Table) -> dict[str, str]:
    return {k: v for k, v in (table.parameters or {}).items() if k not in METASTORE_TABLE_PARAMETERS}


def table_info(id: Identifier, table: Table) -> TableInfo:
    return TableInfo(tuple(id), table_location(table), lance_properties(table), is_lance=is_lance(table))
