"""Every Spark save mode for the `lance` format, ErrorIfExists (Spark's default) and Ignore included.

Spark asks a Python data source to write only in Append or Overwrite: for ErrorIfExists and
Ignore, `DataFrameWriter.save` raises UNSUPPORTED_DATA_SOURCE_SAVE_MODE before the source is
consulted. `install` therefore wraps PySpark's `DataFrameWriter.save` (classic and Spark
Connect, once per process). On a session the `lance` format was installed on, a save in format
`lance` with mode ErrorIfExists or Ignore is sent to Spark as an Append that carries the mode in
the option `save_mode`, and the data source keeps the mode's meaning (see
`lance_source.LanceDataSource.writer`). Every other save, on any session, is passed on as it is.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: the option that carries ErrorIfExists or Ignore to the data source
SAVE_MODE_OPTION = "save_mode"
ERROR_IF_EXISTS = "errorifexists"
IGNORE = "ignore"
#: how Spark spells the modes the data source cannot be handed (`error` is ErrorIfExists)
_MODES = {"errorifexists": ERROR_IF_EXISTS, "error": ERROR_IF_EXISTS, "default": ERROR_IF_EXISTS,
          "ignore": IGNORE}

_WRAPPED = "__lance_sync_save_modes__"
_sessions: weakref.WeakSet[Any] = weakref.WeakSet()


def install(spark: SparkSession) -> None:
    """Let `df.write.format("lance")` on this session take ErrorIfExists and Ignore."""
    _sessions.add(spark)
    for writer_class in _writer_classes():
        if not getattr(writer_class.save, _WRAPPED, False):
            writer_class.save = _keeping_save_modes(writer_class.save)


def _writer_classes() -> list[Any]:
    from pyspark.sql.readwriter import DataFrameWriter

    classes: list[Any] = [DataFrameWriter]
    try:
        from pyspark.sql.connect.readwriter import DataFrameWriter as ConnectDataFrameWriter
    except ImportError:  # Spark Connect's extra (grpcio) is not installed
        return classes
    return [*classes, ConnectDataFrameWriter]


def _keeping_save_modes(save: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(save)
    def wrapped(writer: Any, path: str | None = None, format: str | None = None, mode: str | None = None,
                partitionBy: Any = None, **options: Any) -> None:
        # what PySpark's own save does first, so that the format and mode below are final
        writer.mode(mode).options(**options)
        if partitionBy is not None:
            writer.partitionBy(partitionBy)
        if format is not None:
            writer.format(format)
        lance_mode = _lance_save_mode(writer)
        if lance_mode is not None:
            writer.mode("append").option(SAVE_MODE_OPTION, lance_mode)
        save(writer, path)

    setattr(wrapped, _WRAPPED, True)
    return wrapped


def _lance_save_mode(writer: Any) -> str | None:
    """ErrorIfExists or Ignore, for a `lance` save on a session `install` was called on."""
    if writer._spark not in _sessions:
        return None
    if hasattr(writer, "_jwrite"):  # classic: the JVM writer holds the format and mode
        source, mode = writer._jwrite.source(), writer._jwrite.curmode().name()
    else:  # Spark Connect: the write command being built
        source, mode = writer._write.source, writer._write.mode or "default"
    from lance_sync.data.lance_source import FORMAT

    if str(source).lower() != FORMAT:
        return None
    return _MODES.get(str(mode).lower())
