"""Sources on object storage in a Spark without an S3 connector: read by Python tasks.

The suite's local session has no Hadoop FileSystem for s3:// (no hadoop-aws), so parquet, CSV
and JSON sources there are listed and read with pyarrow (lance_sync.data.file_source), against
the session's moto S3 server. Each test makes its own bucket.
"""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lance_sync.data.file_source import ReadSpec, list_files, reads_in_python
from lance_sync.data.materialize import MaterializeError, materialize, source_schema
from lance_sync.data.storage import open_storage
from lance_sync.model.arrow_types import schema_from_columns
from tests.data.tables import TYPED_SCHEMA, typed_table
from tests.servers import s3

CSV = b"id,seen,name\n1,2024-01-01 00:00:00.250,a\n2,2024-01-02 10:00:00,b\n"


@pytest.fixture
def bucket(s3_server) -> str:
    return s3.new_bucket(s3_server.endpoint, f"files-{uuid.uuid4().hex[:12]}")


@pytest.fixture
def options(s3_server) -> dict[str, str]:
    return s3.storage_options(s3_server.endpoint)


def put(s3_server, bucket: str, key: str, body: bytes) -> None:
    s3.s3_client(s3_server.endpoint).put_object(Bucket=bucket, Key=key, Body=body)


def parquet_bytes(table: pa.Table) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def put_customers(s3_server, bucket: str) -> None:
    """50 rows of the types Spark loses, in two Parquet files, and a _SUCCESS marker."""
    put(s3_server, bucket, "raw/customers/part-0.parquet", parquet_bytes(typed_table(30)))
    put(s3_server, bucket, "raw/customers/part-1.parquet", parquet_bytes(typed_table(20, first_id=30)))
    put(s3_server, bucket, "raw/customers/_SUCCESS", b"")


@pytest.mark.spark
def test_a_parquet_source_on_s3_materializes_with_its_native_types(spark, spark_settings, s3_server, bucket,
                                                                    options):
    put_customers(s3_server, bucket)
    source = {"format": "parquet", "path": f"s3://{bucket}/raw/customers/*.parquet"}
    location = f"s3://{bucket}/lake/customers.lance"
    result = materialize(source, location, None, "create", spark_settings, options)
    assert (result.version, result.row_count, result.schema) == (1, 50, TYPED_SCHEMA)
    written = lance.dataset(location, storage_options=options).to_table().sort_by("id")
    assert written.equals(typed_table(50))


@pytest.mark.spark
def test_storage_settings_from_the_environment_reach_the_python_tasks(spark, spark_settings, s3_server,
                                                                       bucket, monkeypatch, tmp_path):
    """The session's Python workers started before these variables were set: only the options
    lance-sync resolves and ships with the read let them reach the store."""
    put_customers(s3_server, bucket)
    for name, value in s3.aws_environment(s3_server.endpoint).items():
        monkeypatch.setenv(name, value)
    source = {"format": "parquet", "path": f"s3a://{bucket}/raw/customers"}
    result = materialize(source, str(tmp_path / "t.lance"), None, "create", spark_settings)
    assert (result.row_count, result.schema) == (50, TYPED_SCHEMA)


@pytest.mark.spark
def test_csv_on_s3_follows_sparks_header_and_infer_schema(spark, spark_settings, s3_server, bucket, options,
                                                          tmp_path):
    put(s3_server, bucket, "csv/rows.csv", CSV)
    path = f"s3://{bucket}/csv/"
    inferred = source_schema({"format": "csv", "path": path, "options": {"header": True, "inferSchema": True}},
                             spark_settings, options)
    assert [(f.name, f.type) for f in inferred] == [("id", pa.int64()), ("seen", pa.timestamp("us")),
                                                    ("name", pa.string())]
    plain = source_schema({"format": "csv", "path": path}, spark_settings, options)
    assert [(f.name, f.type) for f in plain] == [("_c0", pa.string()), ("_c1", pa.string()), ("_c2", pa.string())]
    source = {"format": "csv", "path": path, "options": {"HEADER": "true"},
              "casts": {"id": "uint32", "seen": "timestamp[ms]"}}
    result = materialize(source, str(tmp_path / "t.lance"), None, "create", spark_settings, options)
    assert result.schema == schema_from_columns([{"name": "id", "type": "uint32"},
                                                 {"name": "seen", "type": "timestamp[ms]"},
                                                 {"name": "name", "type": "string"}])
    rows = lance.dataset(str(tmp_path / "t.lance")).to_table().sort_by("id").to_pylist()
    assert [(row["id"], row["seen"].isoformat(), row["name"]) for row in rows] == [
        (1, "2024-01-01T00:00:00.250000", "a"), (2, "2024-01-02T10:00:00", "b")]


@pytest.mark.spark
def test_json_on_s3_into_a_declared_schema(spark, spark_settings, s3_server, bucket, options, tmp_path):
    rows = typed_table(5).to_pylist()
    put(s3_server, bucket, "json/rows.json",
        "\n".join(json.dumps({**row, "seen": row["seen"].isoformat()}) for row in rows).encode())
    source = {"format": "json", "path": f"s3://{bucket}/json/*.json", "casts": {"seen": "timestamp[ms]"}}
    result = materialize(source, str(tmp_path / "t.lance"), TYPED_SCHEMA, "create", spark_settings, options)
    assert (result.schema, result.row_count) == (TYPED_SCHEMA, 5)
    assert lance.dataset(str(tmp_path / "t.lance")).to_table().sort_by("id").equals(typed_table(5))


@pytest.mark.spark
@pytest.mark.parametrize(("source_format", "reader_options", "refusal"), [
    ("csv", {"comment": "#"}, "the csv option 'comment' is not supported .* supported: header, inferSchema"),
    ("csv", {"mode": "PERMISSIVE"}, "mode=PERMISSIVE is not supported .* only mode=FAILFAST"),
    ("json", {"multiLine": True}, "multiline=true is not supported"),
    ("parquet", {"datetimeRebaseMode": "LEGACY"}, "supported: mergeSchema, recursiveFileLookup, pathGlobFilter"),
])
def test_options_the_python_reader_cannot_honour_are_refused(spark, spark_settings, options, source_format,
                                                             reader_options, refusal):
    source = {"format": source_format, "path": "s3://any-bucket/files/", "options": reader_options}
    with pytest.raises(MaterializeError, match=refusal):
        source_schema(source, spark_settings, options)


@pytest.mark.spark
def test_the_python_reader_only_serves_object_stores_spark_cannot_read(spark):
    for path in ("s3://b/k.parquet", "S3A://b/k/", "gs://b/k.csv"):
        assert reads_in_python(spark, path), path
    for path in ("/data/k.parquet", "file:///data/k.parquet", "hdfs://127.0.0.1:9000/k", "nosuch://b/k"):
        assert not reads_in_python(spark, path), path


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """a.csv, b.csv, sub/c.csv, and the names Spark skips (_SUCCESS, .a.csv.crc, _tmp/d.csv)."""
    for name in ("a.csv", "b.csv", "sub/c.csv", "_SUCCESS", ".a.csv.crc", "_tmp/d.csv"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(CSV)
    return tmp_path


def listed(root: Path, path: str, **reader_options) -> list[str]:
    found = list_files(open_storage(str(root)), path, ReadSpec.parse("csv", reader_options))
    return [str(Path(f).relative_to(root)) for f in found]


def test_files_of_a_directory_a_glob_and_a_name_filter(files: Path):
    assert listed(files, f"{files}/a.csv") == ["a.csv"]
    assert listed(files, f"{files}/*.csv") == ["a.csv", "b.csv"]
    assert listed(files, f"{files}/s[u]?/*") == ["sub/c.csv"]
    assert listed(files, str(files), recursiveFileLookup=True) == ["a.csv", "b.csv", "sub/c.csv"]
    assert listed(files, str(files), recursiveFileLookup=True, pathGlobFilter="[ac].csv") == ["a.csv", "sub/c.csv"]


def test_a_directory_with_subdirectories_or_no_files_is_refused(files: Path):
    with pytest.raises(MaterializeError, match="holds directories .*recursiveFileLookup: true"):
        listed(files, str(files))
    with pytest.raises(MaterializeError, match="no csv files at .*/none/"):
        listed(files, f"{files}/none/*.csv")
    with pytest.raises(MaterializeError, match="glob alternatives"):
        listed(files, f"{files}/{{a,b}}.csv")
