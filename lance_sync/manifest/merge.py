"""Lay overlays over a base manifest, as the manifest reference describes: mappings merge key by
key, entries of `namespaces` and `tables` merge with the entry of the same key, anything else is
replaced. Positions, templates and the text of typed values follow the values they belong to,
so later stages name the line of a problem in any of the files."""

from __future__ import annotations

from typing import Any

from lance_sync.manifest.loader import DataPath, Document, value_at
from lance_sync.manifest.strategy import FastPathUnavailable

#: Top-level lists whose entries are matched by key across files instead of replaced.
_KEYED_LISTS: dict[str, tuple[str, ...]] = {"namespaces": ("backend", "id"), "tables": ("name",)}


def merge_documents(documents: list[Document]) -> Document:
    """Lay each document over the previous ones.

    Mappings merge key by key; entries of `namespaces` (by backend and id) and `tables`
    (by name) merge with the entry of the same key; every other value, lists included,
    is replaced by the overlay's. Nothing changes the documents.
    """
    merged = documents[0]
    for overlay in documents[1:]:
        result = Document(None, files=merged.files + overlay.files)
        result.data = _merge(merged, overlay, (), (), (), result)
        merged = result
    return merged


def _merge(base: Document, overlay: Document, base_path: DataPath, overlay_path: DataPath,
           path: DataPath, out: Document) -> Any:
    base_value = value_at(base.data, base_path)
    overlay_value = value_at(overlay.data, overlay_path)
    if isinstance(base_value, dict) and isinstance(overlay_value, dict):
        _copy_position(overlay, overlay_path, path, out)
        result = {}
        for key in {**base_value, **overlay_value}:
            if key in base_value and key in overlay_value:
                result[key] = _merge(base, overlay, (*base_path, key), (*overlay_path, key),
                                     (*path, key), out)
            elif key in overlay_value:
                result[key] = _copy(overlay, (*overlay_path, key), (*path, key), out)
            else:
                result[key] = _copy(base, (*base_path, key), (*path, key), out)
        return result
    key_fields = _KEYED_LISTS.get(path[0]) if len(path) == 1 and isinstance(path[0], str) else None
    if key_fields and isinstance(base_value, list) and isinstance(overlay_value, list):
        return _merge_keyed(base, overlay, base_path, overlay_path, path, out, key_fields)
    return _copy(overlay, overlay_path, path, out)


def _merge_keyed(base: Document, overlay: Document, base_path: DataPath, overlay_path: DataPath,
                 path: DataPath, out: Document, key_fields: tuple[str, ...]) -> list[Any]:
    _copy_position(overlay, overlay_path, path, out)
    base_list, overlay_list = value_at(base.data, base_path), value_at(overlay.data, overlay_path)
    if _plain_under(base, base_path) and _plain_under(overlay, overlay_path):
        return _merge_keyed_plain(base, overlay, base_path, overlay_path, out, key_fields)
    overlay_index = {_entry_key(entry, key_fields): i for i, entry in enumerate(overlay_list)}
    result: list[Any] = []
    used: set[int] = set()
    for i, entry in enumerate(base_list):
        j = overlay_index.get(_entry_key(entry, key_fields))
        target = (*path, len(result))
        if j is None:
            result.append(_copy(base, (*base_path, i), target, out))
        else:
            used.add(j)
            result.append(_merge(base, overlay, (*base_path, i), (*overlay_path, j), target, out))
    for j in range(len(overlay_list)):
        if j not in used:
            result.append(_copy(overlay, (*overlay_path, j), (*path, len(result)), out))
    return result


def _plain_under(document: Document, path: DataPath) -> bool:
    """Nothing under `path` but the values: no positions, templates, unset or written values."""
    return not (document.positions or document.unset or document.written) \
        and not _templates_under(document, path)


def _merge_keyed_plain(base: Document, overlay: Document, base_path: DataPath, overlay_path: DataPath,
                       out: Document, key_fields: tuple[str, ...]) -> list[Any]:
    """`_merge_keyed` of documents with nothing but values under the lists (a plain road's):
    the same list, built from the base's key index (kept from the merge that made the base)
    in the time the overlay takes. A key twice in either list raises FastPathUnavailable: the full road
    merges (and reports) those."""
    base_list, overlay_list = value_at(base.data, base_path), value_at(overlay.data, overlay_path)
    name = str(overlay_path[0])  # the path of a keyed list: the same in the base, overlay and result
    index = base.key_index.pop(name, None)  # the merged base is not merged again: its index moves on
    if index is None or len(index) != len(base_list):
        index = dict(zip(_entry_keys(base_list, key_fields), range(len(base_list)), strict=True))
        if len(index) != len(base_list):
            raise FastPathUnavailable(f"a key twice in {name}")
    overlay_keys = _entry_keys(overlay_list, key_fields)
    if index.keys().isdisjoint(overlay_keys):  # only new entries (files that split a manifest)
        added = dict(zip(overlay_keys, range(len(base_list), len(base_list) + len(overlay_list)), strict=True))
        if len(added) != len(overlay_list):
            raise FastPathUnavailable(f"a key twice in {name}")
        index.update(added)
        out.key_index[name] = index
        return [*base_list, *overlay_list]
    result = list(base_list)
    matched: set[int] = set()
    for j, entry in enumerate(overlay_list):
        key = overlay_keys[j]
        i = index.get(key)
        if i is None:
            index[key] = len(result)
            matched.add(len(result))
            result.append(entry)
        elif i in matched or i >= len(base_list):
            raise FastPathUnavailable(f"a key twice in {name}")
        else:
            matched.add(i)
            result[i] = _merge(base, overlay, (*base_path, i), (*overlay_path, j), (*base_path, i), out)
    out.key_index[name] = index
    return result


def _entry_keys(entries: list[Any], key_fields: tuple[str, ...]) -> list[Any]:
    """Each entry's `_entry_key`; for tables named with text (the commonest case, a million
    times in a large manifest), their names, read in one pass."""
    if len(key_fields) == 1 and set(map(type, entries)) <= {dict}:
        names = [entry.get(key_fields[0]) for entry in entries]
        if set(map(type, names)) <= {str}:
            return names
    return [_entry_key(entry, key_fields) for entry in entries]


def _entry_key(entry: Any, key_fields: tuple[str, ...]) -> Any:
    if not isinstance(entry, dict):
        return id(entry)
    if len(key_fields) == 1:
        value = entry.get(key_fields[0])
        # text is its own key (never equal to a tuple); anything else by its repr, so that the
        # name 1 and the name '1' stay two entries
        return value if isinstance(value, str) else (repr(value),)
    return tuple(repr(entry.get(k)) for k in key_fields)


def _copy(source: Document, source_path: DataPath, path: DataPath, out: Document) -> Any:
    value = value_at(source.data, source_path)
    if not source.positions and not _templates_under(source, source_path):
        return value  # nothing to carry over but the value itself (a plain document's)
    _copy_position(source, source_path, path, out)
    if isinstance(value, dict):
        return {k: _copy(source, (*source_path, k), (*path, k), out) for k in value}
    if isinstance(value, list):
        return [_copy(source, (*source_path, i), (*path, i), out) for i in range(len(value))]
    return value


def _templates_under(source: Document, path: DataPath) -> bool:
    return any(template[:len(path)] == path for template in source.templates)


def _copy_position(source: Document, source_path: DataPath, path: DataPath, out: Document) -> None:
    if source_path in source.positions:
        out.positions[path] = source.positions[source_path]
    if source_path in source.key_positions:
        out.key_positions[path] = source.key_positions[source_path]
    if source_path in source.templates:
        out.templates[path] = source.templates[source_path]
    if source_path in source.unset:
        out.unset[path] = source.unset[source_path]
    if source_path in source.written:
        out.written[path] = source.written[source_path]
