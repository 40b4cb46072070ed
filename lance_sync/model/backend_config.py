"""What lance-sync knows of a backend without talking to it: its configuration and its identifiers.

Manifest validation (`lance-sync validate`) checks a backend entry against its configuration
model and its identifiers against its rules, offline; it needs neither the Lance Namespace
client nor the backend's SDK. So each backend describes itself twice: a `BackendRules`
subclass in a light module of its own (`drivers/<type>/config.py`, with the `BackendConfig`
model), and the driver (`drivers/<type>/driver.py`), a `SyncNamespace` that inherits those
rules. Only the driver and the other modules of its package import `lance_namespace`,
pyarrow, lance, boto3 or thrift.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveFloat,
    SecretStr,
    ValidationError,
    model_validator,
)

from lance_sync.model.config_types import TextValue
from lance_sync.model.errors import ConfigError
from lance_sync.model.grants import ParentNeed, Securable
from lance_sync.model.secrets import SECRET_KEY, url_password

Identifier = tuple[str, ...]

STORAGE_PREFIX = "storage."


class BackendConfig(BaseModel):
    """Base of every driver's configuration model.

    Fields use the spec's property names (aliases where a name is not a Python
    identifier). Secret fields are `SecretStr`: they never print, and the manifest only
    takes them from `${VAR}`.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    #: fields the manifest adds to a backend entry that are not driver properties
    MANIFEST_ONLY_FIELDS: ClassVar[frozenset[str]] = frozenset({"type", "scope", "grants_mode"})

    storage: dict[str, TextValue] = Field(
        default_factory=dict,
        description="Storage options for reading and writing table data (the spec's `storage.*` "
        "properties), e.g. {region: us-west-2}. Keys that look secret must come from ${VAR}.",
    )

    @model_validator(mode="before")
    @classmethod
    def _collect_storage_properties(cls, values: Any) -> Any:
        """Fold flat `storage.x` connect() properties into the `storage` mapping."""
        if not isinstance(values, dict) or not any(str(k).startswith(STORAGE_PREFIX) for k in values):
            return values
        folded = {k: v for k, v in values.items() if not str(k).startswith(STORAGE_PREFIX)}
        storage = dict(folded.get("storage") or {})
        storage.update({k[len(STORAGE_PREFIX):]: v for k, v in values.items()
                        if str(k).startswith(STORAGE_PREFIX)})
        folded["storage"] = storage
        return folded

    @classmethod
    def from_properties(cls, properties: dict[str, Any]) -> BackendConfig:
        """Validate connect() properties; raises ConfigError naming each bad key."""
        try:
            return cls.model_validate(properties)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'config'}: {e['msg']}" for e in error.errors()
            )
            raise ConfigError(f"invalid {cls.__name__} configuration: {problems}") from None

    def secret_values(self) -> list[str]:
        """What lance-sync masks of this configuration (`lance_sync.model.secrets`): the secret
        fields, the storage options whose keys look secret, and the password of an endpoint
        URL's userinfo."""
        values = [value.get_secret_value() for value in self.__dict__.values() if isinstance(value, SecretStr)]
        values += [value for key, value in self.storage.items() if SECRET_KEY.search(key)]
        values += [url_password(value) or "" for value in self.__dict__.values() if isinstance(value, str)]
        return [value for value in values if value]

    def to_properties(self) -> dict[str, str]:
        """The flat string properties `lance_namespace.connect()` takes (secrets revealed)."""
        properties: dict[str, str] = {}
        for name, info in type(self).model_fields.items():
            value = getattr(self, name)
            if name == "storage" or name in self.MANIFEST_ONLY_FIELDS or value is None:
                continue
            if isinstance(value, SecretStr):
                value = value.get_secret_value()
            properties[info.alias or name] = str(value)
        properties.update({f"{STORAGE_PREFIX}{k}": str(v) for k, v in self.storage.items()})
        return properties


class HttpTimeoutsConfig(BackendConfig):
    """A REST backend's timeouts, in one unit on every backend.

    The specs name them `connect_timeout` and `read_timeout` but count them in different units
    (Unity: seconds; Iceberg REST: milliseconds), so a manifest could not say what it meant
    without knowing the backend. `connect_timeout_seconds` and `read_timeout_seconds` mean the
    same everywhere. The spec keys still work, in the spec's unit (lance_namespace.connect()
    passes them); a manifest that uses one gets a deprecation notice (BackendRules.renamed_keys).
    """

    #: seconds per unit of the spec's connect_timeout and read_timeout
    SPEC_TIMEOUT_UNIT: ClassVar[float] = 1.0

    connect_timeout: float
    read_timeout: float
    connect_timeout_seconds: PositiveFloat | None = Field(
        None, description="Connect timeout, seconds, on every REST backend (default: the spec's connect_timeout)")
    read_timeout_seconds: PositiveFloat | None = Field(
        None, description="Read timeout, seconds, on every REST backend (default: the spec's read_timeout)")

    @model_validator(mode="after")
    def _one_key_per_timeout(self) -> HttpTimeoutsConfig:
        for spec_key in ("connect_timeout", "read_timeout"):
            if {spec_key, f"{spec_key}_seconds"} <= self.model_fields_set:
                raise ValueError(f"set {spec_key}_seconds or {spec_key}, not both")
        return self

    def timeout_seconds(self) -> tuple[float, float]:
        """(connect, read) timeouts in seconds."""
        return (self.connect_timeout_seconds or self.connect_timeout * self.SPEC_TIMEOUT_UNIT,
                self.read_timeout_seconds or self.read_timeout * self.SPEC_TIMEOUT_UNIT)


def default_root() -> str:
    """The spec's default storage root: the current working directory."""
    return os.getcwd()


def root_field() -> Any:
    """The `root` setting of the catalog backends, whose specs share it."""
    return Field(default_factory=default_root,
                 description="Storage root for tables declared without a location (default: cwd)")


def spec_timeout_field(default: float, description: str, renamed_to: str) -> Any:
    """A timeout under the key its backend's spec names, kept for `connect()` properties;
    manifests write the key it was renamed to (`BackendRules.renamed_keys`)."""
    return Field(default, description=f"{description} (the spec's key; in a manifest write {renamed_to})",
                 json_schema_extra={"deprecated": True})


class RenamedKey(NamedTuple):
    """A setting's new key, and how a value of the old one converts to it."""

    key: str
    #: the old key's unit, and what one of it is in the new key's unit
    old_unit: str
    factor: float


class BackendRules:
    """A backend's configuration model and identifier rules, used offline by manifest validation.

    The driver of a backend is a subclass (`SyncNamespace` inherits from this class), so a
    driver from another package that defines no separate rules class is its own.
    """

    #: backend type name in manifests (`lance-sync-<type>` in `lance_namespace.connect()`)
    backend_type: ClassVar[str]
    config_model: ClassVar[type[BackendConfig]]
    #: how identifiers are written in manifests and plans ('$' or '.')
    id_delimiter: ClassVar[str] = "$"
    #: depth of namespace ids a manifest may declare: (min, max or None)
    namespace_levels: ClassVar[tuple[int, int | None]] = (1, None)
    #: depth of the namespace part of a table id
    table_namespace_levels: ClassVar[tuple[int, int | None]] = (1, None)
    #: the settings the check_* methods below read; `validate` skips those checks while one of
    #: them comes from an environment variable that is not set
    checks_read: ClassVar[frozenset[str]] = frozenset()
    #: settings a manifest should no longer use, and what to write instead; each use gets a
    #: deprecation notice (the old key still works)
    renamed_keys: ClassVar[dict[str, RenamedKey]] = {}

    @classmethod
    def parse_identifier(cls, value: str | list[str] | tuple[str, ...]) -> Identifier:
        """A manifest identifier (delimited text or a list) as a tuple of names."""
        if isinstance(value, list | tuple):
            return tuple(str(v) for v in value)
        return tuple(value.split(cls.id_delimiter)) if value else ()

    @classmethod
    def format_identifier(cls, parts: Identifier) -> str:
        """Identifier text for messages and plans; names that contain the delimiter stay readable."""
        if any(cls.id_delimiter in p for p in parts):
            return "[" + ", ".join(repr(p) for p in parts) + "]"
        return cls.id_delimiter.join(parts)

    @classmethod
    def check_namespace_id(cls, parts: Identifier, config: BackendConfig) -> str | None:
        """Backend-specific rules for a declared namespace id; returns a problem or None."""
        return None

    @classmethod
    def check_table_namespace(cls, parts: Identifier, config: BackendConfig) -> str | None:
        """Backend-specific rules for the namespace a table is registered in."""
        return cls.check_namespace_id(parts, config)

    @classmethod
    def check_table_name(cls, name: str, config: BackendConfig) -> str | None:
        """Backend-specific rules for a table's name (e.g. names a catalog would fold to lower case)."""
        return None

    @classmethod
    def check_location(cls, location: str, config: BackendConfig) -> str | None:
        """Backend-specific rules for a table location (already normalized)."""
        return None

    @classmethod
    def own_locations(cls, config: BackendConfig) -> dict[str, str]:
        """The locations the backend keeps for itself (normalized), each with what it is: no
        table may be at or inside one, whatever backend registers it."""
        return {}

    # --- grants (lance_sync.model.grants), checked offline ---------------------------------

    #: a privilege held on a namespace applies to what it holds (Unity), so a parent need is met
    #: by the privilege on the parent or on any of its ancestors
    grants_inherit: ClassVar[bool] = False

    @classmethod
    def grant_privileges(cls, kind: Securable, id: Identifier, config: BackendConfig) -> frozenset[str]:
        """The privileges a grant on this object may name, in canonical spelling; empty where
        the backend (or this level of it) has no grants."""
        return frozenset()

    @classmethod
    def canonical_privilege(cls, privilege: str) -> str:
        """How the backend spells a privilege a manifest wrote ('select' -> 'SELECT')."""
        return privilege.strip().upper()

    @classmethod
    def check_principal(cls, principal: str, config: BackendConfig) -> str | None:
        """Backend-specific rules for a principal's name; returns a problem or None."""
        return None if principal.strip() else "a principal cannot be empty"

    @classmethod
    def parent_needs(cls, kind: Securable, id: Identifier, config: BackendConfig) -> list[ParentNeed]:
        """Privileges on parent namespaces without which a grant on this object is of no use
        (the plan notes those the principal lacks; it never grants them unasked)."""
        return []
