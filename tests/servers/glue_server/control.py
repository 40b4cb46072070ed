"""Test-only state behind the control paths: request counts and injected faults.

A fault rule answers the next `times` matching Glue requests (all of them while
`times` is None) with an error instead of doing the work, e.g.
`{"code": "ThrottlingException", "times": 2, "operations": ["GetTables"]}` or
`{"code": "AccessDeniedException", "times": null, "names": ["secret_db"]}`.
A rule with `names` matches a request that names one of them as a catalog
(any part of a CatalogId), database or table.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass

from tests.servers.glue_server.errors import GlueError

#: HTTP status of the error codes tests inject most; any other code needs "status" or gets 400.
DEFAULT_STATUS = {
    "ThrottlingException": 400,
    "AccessDeniedException": 400,
    "InternalServiceException": 500,
    "ServiceUnavailableException": 503,
}


@dataclass
class FaultRule:
    code: str
    status: int
    message: str
    times: int | None  # None: until the rules are cleared
    operations: frozenset[str] | None
    names: frozenset[str] | None

    @classmethod
    def from_json(cls, spec: dict) -> FaultRule:
        code = spec["code"]
        operations, names = spec.get("operations"), spec.get("names")
        return cls(
            code=code,
            status=int(spec.get("status", DEFAULT_STATUS.get(code, 400))),
            message=spec.get("message", f"{code} injected by the test server."),
            times=spec.get("times", 1),
            operations=frozenset(operations) if operations else None,
            names=frozenset(name.lower() for name in names) if names else None,
        )

    def as_json(self) -> dict:
        return {
            "code": self.code,
            "status": self.status,
            "message": self.message,
            "times": self.times,
            "operations": sorted(self.operations) if self.operations else None,
            "names": sorted(self.names) if self.names else None,
        }

    def matches(self, operation: str, params: dict) -> bool:
        if self.operations is not None and operation not in self.operations:
            return False
        return self.names is None or not self.names.isdisjoint(names_in(params))


def names_in(params: dict) -> set[str]:
    """The catalog, database and table names a Glue or Lake Formation request mentions, lower case."""
    names = [params.get(key) for key in ("Name", "DatabaseName", "TableName")]
    names += [(params.get(key) or {}).get("Name") for key in ("DatabaseInput", "TableInput")]
    ids = [params.get(key) for key in ("CatalogId", "ParentCatalogId")]
    for spec in _lakeformation_resources(params):
        names += [spec.get("Name"), spec.get("DatabaseName")]
        ids += [spec.get("CatalogId"), spec.get("Id")]
    for catalog_id in ids:
        names += re.split(r"[:/]", catalog_id) if isinstance(catalog_id, str) else []
    return {name.lower() for name in names if isinstance(name, str) and name}


def _lakeformation_resources(params: dict) -> list[dict]:
    """The inner dicts of a Lake Formation request's Resource and of its batch entries' Resources."""
    entries = params.get("Entries")
    resources = [params.get("Resource")]
    resources += [entry.get("Resource") for entry in entries if isinstance(entry, dict)] if isinstance(entries, list) else []
    return [
        spec
        for resource in resources
        if isinstance(resource, dict)
        for spec in resource.values()
        if isinstance(spec, dict)
    ]


class RequestCounter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def record(self, operation: str) -> None:
        with self._lock:
            self._counts[operation] += 1

    def snapshot(self) -> dict:
        with self._lock:
            return {"total": sum(self._counts.values()), "by_operation": dict(self._counts)}

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()


class FaultInjector:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[FaultRule] = []

    def add(self, rule: FaultRule) -> None:
        with self._lock:
            self._rules.append(rule)

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def rules(self) -> list[dict]:
        with self._lock:
            return [rule.as_json() for rule in self._rules]

    def raise_if_injected(self, operation: str, params: dict) -> None:
        """Use up one answer of the first rule matching this request, and raise its error."""
        with self._lock:
            rule = next((rule for rule in self._rules if rule.matches(operation, params)), None)
            if rule is None:
                return
            if rule.times is not None:
                rule.times -= 1
                if rule.times <= 0:
                    self._rules.remove(rule)
        raise GlueError(rule.code, rule.message, rule.status)
