"""What HMS does to the warehouse file system, for `file:` locations only.

Other schemes (s3://, hdfs://) are kept as opaque strings: this server has no
file system for them, where a real HMS would use Hadoop's.
"""

from __future__ import annotations

import os
import shutil

from pymetastore.hive_metastore.ttypes import MetaException

from tests.servers.hive3_server.names import local_path


def make_directory(location: str) -> bool:
    """Create the directory behind `location` if it is missing; True if this call made it."""
    path = local_path(location)
    if path is None or os.path.isdir(path):
        return False
    try:
        os.makedirs(path)
    except OSError as error:
        raise MetaException(f"{location} is not a directory or unable to create one") from error
    return True


def delete_directory(location: str | None) -> None:
    """Delete a directory tree, as HMS does when it drops data; missing is fine."""
    path = local_path(location)
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)


def is_inside(location: str, parent: str) -> bool:
    return location == parent or location.startswith(parent.rstrip("/") + "/")


def quick_stats(location: str) -> dict[str, str]:
    """numFiles and totalSize as HMS computes them: every file below, skipping names
    that start with '_' or '.' (and everything under such directories)."""
    path = local_path(location)
    files = sizes = 0
    if path is not None:
        for root, directories, names in os.walk(path):
            directories[:] = [name for name in directories if not _is_hidden(name)]
            for name in names:
                if not _is_hidden(name):
                    files += 1
                    sizes += os.path.getsize(os.path.join(root, name))
    return {"numFiles": str(files), "totalSize": str(sizes)}


def _is_hidden(name: str) -> bool:
    return name.startswith(("_", "."))
