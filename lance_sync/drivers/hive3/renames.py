"""Renames, moves and location changes of a Lance table in place: one `alter_table` of the table
as the driver's client read it, with a new name, database or storage location
(`Hive3Namespace.rename_table`, `Hive3Namespace.update_table_location`), through the client
(`client.Hive3Client`).

`alter_table` keeps what HMS never takes from the new definition (createTime, the catalog) and
takes the rest from the table sent: its parameters, storage descriptor and owner go back as they
were read. On a rename HMS moves the data of a managed table into the new name's directory; it
leaves an external one's alone (HMS's test is the parameter EXTERNAL=TRUE, which a Lance table
carries: `objects.LANCE_TABLE_PARAMETERS`), so the location stays what it was. A table without
it is refused before anything is sent.

A catalog cannot be changed (HMS 3 refuses to move a table between catalogs): a move stays
within the table's catalog (`MOVE_FIXED_LEVELS`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lance_namespace.errors import InvalidInputError, TableAlreadyExistsError, TableNotFoundError

from lance_sync.drivers.base import Identifier
from lance_sync.drivers.hive3.objects import EXTERNAL_KEY, display, table_location
from lance_sync.drivers.support.locations import catalog_url

if TYPE_CHECKING:
    from lance_sync.drivers.hive3.client import Hive3Client

#: a move keeps the table's catalog
MOVE_FIXED_LEVELS = 1


def rename(client: Hive3Client, source: Identifier, destination: Identifier) -> None:
    """alter_table with the new name (and database), after the checks that let nothing change
    unless it can all change: the source is a Lance table (TableNotFound, InvalidInput), the
    destination database exists (NamespaceNotFound) and the destination name is free
    (TableAlreadyExists). A refusal the metastore gives anyway (another writer came between) is
    explained by reading both again."""
    catalog, database, name = source
    _, new_database, new_name = destination
    table = client.lance_table(catalog, database, name)
    if (table.parameters or {}).get(EXTERNAL_KEY, "").upper() != "TRUE":
        raise InvalidInputError(f"hive3: table {display(source)} lacks {EXTERNAL_KEY}=TRUE: the metastore "
                                "would move its data on a rename; nothing was changed")
    if new_database.lower() != database.lower():
        client.get_database(catalog, new_database)
    _check_free(client, destination)
    table.dbName, table.tableName = new_database, new_name
    try:
        client.alter_lance_table(source, table)
    except InvalidInputError:  # the source was there (else TableNotFound): what else went?
        if new_database.lower() != database.lower():
            client.get_database(catalog, new_database)
        _check_free(client, destination)
        raise


def relocate(client: Hive3Client, id: Identifier, location: str) -> None:
    """alter_table with the storage descriptor's location changed to `location` (absolute: the
    driver takes a relative one from its root, as a declare does), the rest of the table as read."""
    catalog, database, name = id
    table = client.lance_table(catalog, database, name)
    if table_location(table) == location:
        return
    table.sd.location = catalog_url(location)
    client.alter_lance_table(id, table)


def _check_free(client: Hive3Client, destination: Identifier) -> None:
    try:
        client.get_table(*destination)
    except TableNotFoundError:
        return
    raise TableAlreadyExistsError(f"hive3: table {display(destination)} already exists")
