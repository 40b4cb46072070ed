"""Checks of the metastore's answers where they enter the driver.

Every read's answer is checked before the driver uses it (`ANSWER_CHECKS`, one check per
read call): the fields listed in `STRUCT_FIELDS` must be present, and every field listed
(present or optional) must have the Python type its Thrift type gives (taken from the
generated `thrift_spec`); fields the IDL marks required are checked by the generated
`validate()`. The object must also be the one asked for. A check returns what was wrong, which
the driver raises as a BadAnswerError naming the call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

from pymetastore.hive_metastore.ttypes import (
    Catalog,
    Database,
    GetCatalogRequest,
    GetCatalogResponse,
    GetCatalogsResponse,
    GetTableRequest,
    GetTableResult,
    GetTablesRequest,
    GetTablesResult,
    HiveObjectPrivilege,
    HiveObjectRef,
    PrincipalType,
    PrivilegeGrantInfo,
    ShowLocksRequest,
    ShowLocksResponse,
    ShowLocksResponseElement,
    StorageDescriptor,
    Table,
)
from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TType

from lance_sync.drivers.hive3.errors import message
from lance_sync.drivers.hive3.objects import DEFAULT_CATALOG, is_lance


class _ThriftStruct(Protocol):
    """A struct class the Thrift compiler generated (pymetastore ships no type information)."""

    thrift_spec: ClassVar[tuple[Any, ...]]

    def validate(self) -> None: ...


#: struct -> (fields the driver needs, fields it reads when present)
STRUCT_FIELDS: dict[type[_ThriftStruct], tuple[tuple[str, ...], tuple[str, ...]]] = {
    GetCatalogsResponse: (("names",), ()),
    GetCatalogResponse: (("catalog",), ()),
    Catalog: (("name",), ("description", "locationUri")),
    Database: (("name", "parameters"), ("description", "locationUri", "ownerName", "ownerType", "catalogName")),
    # GetTableResult.table and GetTablesResult.tables are IDL-required (validate()); each table
    # is checked by _table_problem, against what was asked for. HMS fills tableType and adds
    # transient_lastDdlTime to every table; a view's sd has no location; sd.location is needed
    # for Lance tables only (_table_problem)
    Table: (("tableName", "dbName", "tableType", "parameters"), ("sd", "catName")),
    StorageDescriptor: ((), ("location",)),
    ShowLocksResponse: (("locks",), ()),
    HiveObjectPrivilege: (("hiveObject", "principalName", "principalType", "grantInfo"), ()),
    HiveObjectRef: (("objectType", "dbName"), ("objectName", "catName")),
    PrivilegeGrantInfo: (("privilege",), ("grantOption",)),
    ShowLocksResponseElement: (("lockid", "dbname", "state", "lastheartbeat"), ("user", "hostname", "agentInfo")),
}
PYTHON_TYPES = {TType.STRING: str, TType.BOOL: bool, TType.BYTE: int, TType.I16: int,
                TType.I32: int, TType.I64: int, TType.DOUBLE: float}
LIST_OF_STRINGS = (TType.STRING, "UTF8", False)


@functools.cache
def _field_types(struct_type: type[_ThriftStruct]) -> dict[str, tuple[int, Any]]:
    """Field name -> (Thrift type, type arguments), from the generated `thrift_spec`."""
    return {field[2]: (field[1], field[3]) for field in struct_type.thrift_spec if field}


def _value_problem(value: Any, ttype: int, args: Any, where: str) -> str | None:
    """What is wrong with `value` as a value of Thrift type `ttype`, or None. Structs are
    checked by their STRUCT_FIELDS; containers element by element."""
    if value is None:
        return f"{where} is missing"
    if ttype == TType.STRUCT:
        return _struct_problem(value, args[0], where)
    if ttype in (TType.LIST, TType.SET):
        if not isinstance(value, list | set | frozenset):
            return f"{where} is {shown(value)}, not a list"
        for index, item in enumerate(value):
            if problem := _value_problem(item, args[0], args[1], f"{where}[{index}]"):
                return problem
        return None
    if ttype == TType.MAP:
        if not isinstance(value, dict):
            return f"{where} is {shown(value)}, not a map"
        for key, item in value.items():
            if problem := (_value_problem(key, args[0], args[1], f"{where} key {key!r}")
                           or _value_problem(item, args[2], args[3], f"{where}[{key!r}]")):
                return problem
        return None
    expected = PYTHON_TYPES[ttype]
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        return f"{where} is {shown(value)}, not {'a string' if expected is str else expected.__name__}"
    return None


def shown(value: Any, limit: int = 60) -> str:
    """A value's type and a short repr, for a message."""
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= limit else text[:limit] + '...'}"


def _struct_problem(value: Any, struct_type: type[_ThriftStruct], where: str) -> str | None:
    """What is wrong with `value` as a `struct_type` (see STRUCT_FIELDS), or None."""
    if value is None:
        return f"{where} is missing"
    if not isinstance(value, struct_type):
        return f"{where} is {shown(value)}, not a {struct_type.__name__}"
    try:
        value.validate()  # the fields the IDL marks required
    except TProtocolException as error:
        return f"{where}: {message(error)}"
    needed, optional = STRUCT_FIELDS.get(struct_type, ((), ()))
    types = _field_types(struct_type)
    for name in (*needed, *optional):
        field = getattr(value, name, None)
        if field is None:
            if name in needed:
                return f"{where}.{name} is missing"
            continue
        if problem := _value_problem(field, *types[name], f"{where}.{name}"):
            return problem
    return None


def same_name(answered: str, asked: Any) -> bool:
    """HMS folds names to lower case; an unknown (None) asked name matches anything."""
    return not isinstance(asked, str) or answered.lower() == asked.lower()


def _check_names(answer: Any, *_args: Any) -> str | None:
    """A list of names (get_all_databases, get_databases, get_all_tables)."""
    problem = _value_problem(answer, TType.LIST, LIST_OF_STRINGS, "names")
    if problem is None and "" in answer:
        problem = f"names[{answer.index('')}] is empty"
    return problem


def _check_catalogs(answer: Any) -> str | None:
    problem = _struct_problem(answer, GetCatalogsResponse, "GetCatalogsResponse")
    if problem is None and "" in answer.names:
        problem = f"GetCatalogsResponse.names[{answer.names.index('')}] is empty"
    return problem


def _check_catalog(answer: Any, request: GetCatalogRequest) -> str | None:
    problem = _struct_problem(answer, GetCatalogResponse, "GetCatalogResponse")
    if problem is None and not same_name(answer.catalog.name, request.name):
        problem = f"catalog {answer.catalog.name!r} answered for catalog {request.name!r}"
    return problem


def _check_database(answer: Any, ref: str) -> str | None:
    """An unprefixed `ref` names a database of the server's default catalog, whatever its name;
    HMS 2.x sends no catalogName."""
    catalog, _, database = ref[1:].partition("#") if ref.startswith("@") else (None, "", ref)
    problem = _struct_problem(answer, Database, "Database")
    if problem is None and not (same_name(answer.name, database)
                                and (answer.catalogName is None or same_name(answer.catalogName, catalog))):
        asked = f"{catalog}${database}" if catalog else database
        problem = f"database {answer.name!r} (catalog {answer.catalogName!r}) answered for {asked!r}"
    return problem


def _check_table_result(answer: Any, request: GetTableRequest) -> str | None:
    return (_struct_problem(answer, GetTableResult, "GetTableResult")
            or _table_problem(answer.table, "GetTableResult.table", request.catName, request.dbName,
                              {request.tblName.lower()} if isinstance(request.tblName, str) else None))


def _check_tables_result(answer: Any, request: GetTablesRequest) -> str | None:
    problem = _struct_problem(answer, GetTablesResult, "GetTablesResult")
    if problem:
        return problem
    if not isinstance(answer.tables, list):
        return f"GetTablesResult.tables is {shown(answer.tables)}, not a list"
    asked = {name.lower() for name in request.tblNames or ()}
    seen: set[str] = set()
    for index, table in enumerate(answer.tables):
        where = f"GetTablesResult.tables[{index}]"
        if problem := _table_problem(table, where, request.catName, request.dbName, asked):
            return problem
        if table.tableName.lower() in seen:
            return f"{where}: table {table.tableName!r} is answered twice"
        seen.add(table.tableName.lower())
    return None


def _check_locks(answer: Any, request: ShowLocksRequest) -> str | None:
    problem = _struct_problem(answer, ShowLocksResponse, "ShowLocksResponse")
    if problem is None and not isinstance(answer.locks, list):
        problem = f"ShowLocksResponse.locks is {shown(answer.locks)}, not a list"
    for index, lock in enumerate(answer.locks if problem is None else []):
        problem = _struct_problem(lock, ShowLocksResponseElement, f"ShowLocksResponse.locks[{index}]")
        if problem:
            break
    return problem


def _check_privileges(answer: Any, principal_name: str | None, principal_type: int | None,
                      ref: HiveObjectRef) -> str | None:
    """list_privileges of one database or table: every row is of that object (HMS 2.x sends
    no catName), of a principal kind the driver knows, and of the principal asked for."""
    problem = _value_problem(answer, TType.LIST, (TType.STRUCT, [HiveObjectPrivilege, None], False),
                             "privileges")
    for index, row in enumerate(answer if problem is None else []):
        where = f"privileges[{index}]"
        found = row.hiveObject
        if row.principalType not in (PrincipalType.USER, PrincipalType.GROUP, PrincipalType.ROLE):
            return f"{where}.principalType is {row.principalType!r}, not USER, GROUP or ROLE"
        if not row.principalName:
            return f"{where}.principalName is empty"
        if principal_name is not None and (row.principalName, row.principalType) != (principal_name, principal_type):
            return f"{where}: principal {row.principalName!r} was not asked for"
        if not (found.objectType == ref.objectType and same_name(found.dbName, ref.dbName)
                and (ref.objectName is None or (isinstance(found.objectName, str)
                                                and same_name(found.objectName, ref.objectName)))
                and (found.catName is None or same_name(found.catName, ref.catName or DEFAULT_CATALOG))):
            return (f"{where}: a privilege on {found.objectType!r} {found.catName!r}.{found.dbName!r}."
                    f"{found.objectName!r} answered for {ref.objectType!r} {ref.catName!r}.{ref.dbName!r}."
                    f"{ref.objectName!r}")
    return problem


def _table_problem(table: Table, where: str, catalog: str | None, database: str | None,
                   names: set[str] | None) -> str | None:
    """A table's needed fields; that it is one asked for; that a Lance table has a location."""
    if problem := _struct_problem(table, Table, where):
        return problem
    if names is not None and table.tableName.lower() not in names:
        return f"{where}: table {table.tableName!r} was not asked for"
    if not (same_name(table.dbName, database) and (table.catName is None or same_name(table.catName, catalog))):
        return (f"{where}: table {table.tableName!r} of database {table.dbName!r} (catalog "
                f"{table.catName!r}) answered for database {database!r} (catalog {catalog!r})")
    if is_lance(table) and not (table.sd and table.sd.location):
        return f"{where}: Lance table {table.tableName!r} has no sd.location"
    return None


#: the read calls, each with the check of its answer: a read is any call listed here
ANSWER_CHECKS: dict[str, Callable[..., str | None]] = {
    "get_catalogs": _check_catalogs,
    "get_catalog": _check_catalog,
    "get_database": _check_database,
    "get_databases": _check_names,
    "get_all_databases": _check_names,
    "get_all_tables": _check_names,
    "get_table_req": _check_table_result,
    "get_table_objects_by_name_req": _check_tables_result,
    "show_locks": _check_locks,
    "list_privileges": _check_privileges,
    "get_role_names": _check_names,
}
#: calls that change nothing, so sending them again is safe
READ_CALLS = frozenset(ANSWER_CHECKS)
