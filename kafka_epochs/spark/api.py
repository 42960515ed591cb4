"""The Spark adapters: a column expression, DataFrame transforms, and a VARIANT view of bodies.

All of them hand whole Arrow batches to :func:`~kafka_epochs.spark.batch.decode_batch` (or its
typed twin), never row-at-a-time pickled Python: moving a row to Python costs well under a
microsecond on the Arrow paths and several with pickled ``@udf`` rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd  # type: ignore[import-untyped]  # no stubs; PySpark's pandas UDFs need it anyway
import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kafka_epochs.protocol_refs import ProtocolLike, ProtocolRef, protocol_ref
from kafka_epochs.spark.batch import DECODED_SCHEMA, decode_batch
from kafka_epochs.spark.projected import FRAME_INDEX, AnyPlan, Plan, project_any_batch, project_batch
from kafka_epochs.spark.schema import message_classes
from kafka_epochs.spark.shipping import ship_package
from kafka_epochs.spark.spark_types import spark_schema
from kafka_epochs.spark.typed import decode_typed_batch, typed_schema

ColumnLike = Column | str
#: The kafka-capture source's column that marks raw SASL tokens, used when present.
SASL_COLUMN = "sasl_mechanism"
#: The kafka-capture source's pairing columns: used by default when a DataFrame has all three.
CAPTURE_PAIRING = ("direction", "request_api_key", "request_api_version")


def decode_frame(
    frame: ColumnLike,
    direction: ColumnLike | None = None,
    request_api_key: ColumnLike | None = None,
    request_api_version: ColumnLike | None = None,
    *,
    protocol: ProtocolLike = None,
) -> Column:
    """A column of frames -> a struct column of :data:`~kafka_epochs.spark.batch.DECODED_SCHEMA`.

    ``df.select(decode_frame("frame").alias("d")).select("d.*")`` gives the decoded columns.
    Pass ``direction`` and the request's key and version columns to decode responses too.
    """
    ref = protocol_ref(protocol)
    # a string column of frames would reach the worker as text; bytes are what the decoder reads
    args = [F.col(frame) if isinstance(frame, str) else frame]
    args[0] = args[0].cast("binary")
    if direction is not None:
        args += [_col(direction).cast("string"), _col(request_api_key, "int"), _col(request_api_version, "int")]
    return _scalar_udf(ref)(*args)


def decode_frames(
    df: DataFrame,
    frame_col: str = "frame",
    keep: Sequence[str] | None = None,
    direction_col: str | None = None,
    request_api_key_col: str | None = None,
    request_api_version_col: str | None = None,
    *,
    protocol: ProtocolLike = None,
    headers_only: bool = False,
    fields: Sequence[str] | Mapping[str, str] | None = None,
) -> DataFrame:
    """Decode ``df[frame_col]`` batch by batch (``mapInArrow``); ``keep`` columns pass through first.

    Responses need their direction and their request's api key and version: the
    ``kafka-capture`` source's ``direction``, ``request_api_key`` and ``request_api_version``
    columns are used when ``df`` has them and no other columns are named. Without any, every frame
    is read as a request, exactly (a frame with bytes left over fails its row), and each row says
    it was assumed. ``keep`` defaults to every column but the frame and those a decoded column
    replaces (such as an input ``direction``). Rows out = rows in; bad rows say why in ``error``.
    With ``headers_only``, bodies are not read (``body_json`` and ``error_codes`` null): headers,
    pairing and latency questions, at the speed of the vectorized header pass. With ``fields``
    (paths, or ``{column: path}``), each message reads the paths it has, by projection, into one
    typed column per path: one row per element of the innermost array walked, and one row (field
    columns null) for a frame with none of them, so no frame is lost.
    """
    ship_package(df.sparkSession)  # a cluster's executors get this kafka_epochs
    if fields is not None:
        if isinstance(fields, str):
            raise TypeError("fields is a list of field paths (or a {column: path} dict), not one string")
        ref = protocol_ref(protocol)
        return _projected(
            df,
            AnyPlan(fields, ref),
            project_any_batch,
            frame_col,
            keep,
            direction_col,
            request_api_key_col,
            request_api_version_col,
            ref,
        )
    inputs = _Inputs(df, frame_col, keep, direction_col, request_api_key_col, request_api_version_col, DECODED_SCHEMA)
    columns = inputs.columns  # the closure below is pickled to the workers: plain data only
    ref = protocol_ref(protocol)

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            decoded = decode_batch(
                batch.column(frame_col), protocol=ref, headers_only=headers_only, **columns.pairing(batch)
            )
            yield columns.joined(batch, decoded)

    return inputs.source.mapInArrow(decode, inputs.output_schema)


def decode_api(
    df: DataFrame,
    message_name: str,
    frame_col: str = "frame",
    keep: Sequence[str] | None = None,
    direction_col: str | None = None,
    request_api_key_col: str | None = None,
    request_api_version_col: str | None = None,
    *,
    protocol: ProtocolLike = None,
    fields: Sequence[str] | Mapping[str, str] | None = None,
) -> DataFrame:
    """The frames of one message, its body as a typed ``body`` struct (see ``schema.arrow_type_for``).

    Only rows of that api and direction come out (bad ones among them with ``error`` set): the
    body's type fits that message only. A response message needs the direction and request
    columns: the ``kafka-capture`` source's are found by themselves (see :func:`decode_frames`).

    With ``fields`` (paths such as ``topics[].partitions[].leader_epoch``, or ``{column: path}``),
    the body is not decoded: only those fields are read, each into its own typed column, one row
    per element of the innermost array walked (see :mod:`kafka_epochs.spark.projected`).
    """
    ship_package(df.sparkSession)  # a cluster's executors get this kafka_epochs
    if fields is not None:
        return _decode_fields(
            df,
            message_name,
            fields,
            frame_col,
            keep,
            direction_col,
            request_api_key_col,
            request_api_version_col,
            protocol,
        )
    cls = message_classes(message_name, protocol)[0]
    if cls.API_KEY is None:
        raise ValueError(f"{message_name} is not a request or a response: frames never carry it alone")
    kind = cls.MESSAGE_TYPE
    if kind == "response" and direction_col is None and not all(c in df.columns for c in CAPTURE_PAIRING):
        raise ValueError(f"{message_name} is a response: pass direction_col and the request's key/version columns")
    ref = protocol_ref(protocol)
    schema = typed_schema(message_name, ref)
    inputs = _Inputs(df, frame_col, keep, direction_col, request_api_key_col, request_api_version_col, schema)
    inputs.only_message(cls.API_KEY, kind, frame_col)
    columns = inputs.columns  # the closure below is pickled to the workers: plain data only

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            decoded = decode_typed_batch(batch.column(frame_col), message_name, protocol=ref, **columns.pairing(batch))
            yield columns.joined(batch, decoded)

    decoded = inputs.source.mapInArrow(decode, inputs.output_schema)
    return decoded.where((F.col("api_key") == cls.API_KEY) & (F.col("direction") == kind))


def _decode_fields(
    df: DataFrame,
    message_name: str,
    fields: Sequence[str] | Mapping[str, str],
    frame_col: str,
    keep: Sequence[str] | None,
    direction_col: str | None,
    request_api_key_col: str | None,
    request_api_version_col: str | None,
    protocol: ProtocolLike,
) -> DataFrame:
    if isinstance(fields, str):
        raise TypeError("fields is a list of field paths (or a {column: path} dict), not one string")
    ref = protocol_ref(protocol)
    plan = Plan(message_name, fields, ref)
    if plan.kind == "response" and direction_col is None and not all(c in df.columns for c in CAPTURE_PAIRING):
        raise ValueError(f"{message_name} is a response: pass direction_col and the request's key/version columns")
    return _projected(
        df,
        plan,
        project_batch,
        frame_col,
        keep,
        direction_col,
        request_api_key_col,
        request_api_version_col,
        ref,
        message=(plan.api_key, plan.kind),
    )


def _projected(
    df: DataFrame,
    plan: Any,
    project: Any,
    frame_col: str,
    keep: Sequence[str] | None,
    direction_col: str | None,
    request_api_key_col: str | None,
    request_api_version_col: str | None,
    ref: ProtocolRef,
    message: tuple[int, str] | None = None,
) -> DataFrame:
    """A projection's ``mapInArrow``: its rows, each with its frame's kept columns taken along.

    ``message`` (api key, "request" or "response"): only that message's rows come out, so the
    others need not travel to Python (see :meth:`_Inputs.only_message`).
    """
    inputs = _Inputs(df, frame_col, keep, direction_col, request_api_key_col, request_api_version_col, plan.schema())
    if message is not None:
        inputs.only_message(*message, frame_col)
    columns = inputs.columns  # the closure below is pickled to the workers: plain data only

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            rows = project(batch.column(frame_col), plan, protocol=ref, **columns.pairing(batch))
            taken = batch.select(list(columns.keep)).take(rows.column(FRAME_INDEX)) if columns.keep else None
            kept = [taken.column(c) for c in columns.keep] if taken is not None else []
            yield pa.RecordBatch.from_arrays(kept + rows.columns[:-1], names=[*columns.keep, *rows.schema.names[:-1]])

    return inputs.source.mapInArrow(decode, inputs.output_schema)


def with_variant(df: DataFrame, json_col: str = "body_json", name: str = "body") -> DataFrame:
    """Add ``name``: the JSON body as a VARIANT (Spark 4+), queryable with ``variant_get`` or ``:``.

    ``try_parse_json`` rather than ``parse_json``: a body JSON cannot represent (a NaN float)
    becomes null instead of failing the job.
    """
    parse = getattr(F, "try_parse_json", None)
    if parse is None:
        raise NotImplementedError("VARIANT needs Spark 4.0 or later; query body_json with from_json instead")
    return df.withColumn(name, parse(F.col(json_col)))


# -- helpers ------------------------------------------------------------------------------------


def _col(column: ColumnLike | None, cast: str | None = None) -> Column:
    out = F.lit(None) if column is None else F.col(column) if isinstance(column, str) else column
    return out.cast(cast) if cast else out


def _scalar_udf(ref: ProtocolRef) -> Any:
    """The column UDF: ``@arrow_udf`` (PySpark 4.1+), else ``@pandas_udf`` over the same decoder."""
    return_type = spark_schema(DECODED_SCHEMA)
    arrow_udf = getattr(F, "arrow_udf", None)
    if arrow_udf is not None:
        return _arrow_scalar(arrow_udf, return_type, ref)
    return _pandas_scalar(return_type, ref)


def _arrow_scalar(arrow_udf: Any, return_type: T.StructType, ref: ProtocolRef) -> Any:
    def decode(frames: pa.Array, *pairing: pa.Array) -> pa.Array:
        return _as_struct(decode_batch(frames, protocol=ref, **_pairing_kwargs(pairing)))

    return arrow_udf(decode, return_type)


def _pandas_scalar(return_type: T.StructType, ref: ProtocolRef) -> Any:
    from pyspark.sql.functions import pandas_udf

    # PySpark picks the UDF kind from the type hints, which must be spelled out (no *args)
    def decode_requests(frames: pd.Series) -> pd.DataFrame:
        return _pandas_frame(decode_batch(pa.Array.from_pandas(frames, type=pa.binary()), protocol=ref))

    def decode_paired(frames: pd.Series, direction: pd.Series, key: pd.Series, version: pd.Series) -> pd.DataFrame:
        batch = decode_batch(
            pa.Array.from_pandas(frames, type=pa.binary()),
            direction=pa.Array.from_pandas(direction),
            request_api_key=pa.Array.from_pandas(key),
            request_api_version=pa.Array.from_pandas(version),
            protocol=ref,
        )
        return _pandas_frame(batch)

    requests_udf = pandas_udf(decode_requests, return_type)  # type: ignore[call-overload]
    paired_udf = pandas_udf(decode_paired, return_type)  # type: ignore[call-overload]
    return lambda *columns: (paired_udf if len(columns) > 1 else requests_udf)(*columns)


def _pandas_frame(batch: pa.RecordBatch) -> pd.DataFrame:
    # lists stay Python lists (not numpy arrays), which Spark's converter takes for array columns
    return pd.DataFrame({name: batch.column(name).to_pylist() for name in batch.schema.names})


def _pairing_kwargs(pairing: tuple[pa.Array, ...]) -> dict[str, pa.Array]:
    if not pairing:
        return {}
    direction, key, version = pairing
    return {"direction": direction, "request_api_key": key, "request_api_version": version}


def _as_struct(batch: pa.RecordBatch) -> pa.StructArray:
    return pa.StructArray.from_arrays(batch.columns, fields=list(batch.schema))


@dataclass(frozen=True)
class _Columns:
    """Names a worker needs to take one batch apart and put the result together (picklable)."""

    keep: tuple[str, ...]
    direction: str | None
    request_api_key: str | None
    request_api_version: str | None

    def pairing(self, batch: pa.RecordBatch) -> dict[str, pa.Array]:
        if self.direction is None or self.request_api_key is None or self.request_api_version is None:
            return {}
        out = {
            "direction": batch.column(self.direction),
            "request_api_key": batch.column(self.request_api_key),
            "request_api_version": batch.column(self.request_api_version),
        }
        if SASL_COLUMN in batch.schema.names:  # the capture source's mark of raw SASL tokens
            out["sasl_mechanism"] = batch.column(SASL_COLUMN)
        return out

    def joined(self, batch: pa.RecordBatch, decoded: pa.RecordBatch) -> pa.RecordBatch:
        columns = [batch.column(c) for c in self.keep] + decoded.columns
        return pa.RecordBatch.from_arrays(columns, names=[*self.keep, *decoded.schema.names])


class _Inputs:
    """Driver side of a mapInArrow decode: checks the columns, selects them, declares the output."""

    def __init__(
        self,
        df: DataFrame,
        frame_col: str,
        keep: Sequence[str] | None,
        direction_col: str | None,
        request_api_key_col: str | None,
        request_api_version_col: str | None,
        decoded: pa.Schema,
    ) -> None:
        names = df.columns
        if (
            direction_col is None
            and request_api_key_col is None
            and request_api_version_col is None
            and all(c in names for c in CAPTURE_PAIRING)
        ):
            direction_col, request_api_key_col, request_api_version_col = CAPTURE_PAIRING
        if keep is None:
            kept = [c for c in names if c != frame_col and c not in decoded.names]
        else:
            kept = list(keep)
            clash = sorted(set(kept) & set(decoded.names))
            if clash:
                raise ValueError(f"kept columns {clash} clash with decoded columns; rename them first")
        pairing = [c for c in (direction_col, request_api_key_col, request_api_version_col) if c is not None]
        if direction_col is not None and SASL_COLUMN in names:
            pairing.append(SASL_COLUMN)
        for column in [frame_col, *kept, *pairing]:
            if column not in names:
                raise ValueError(f"no column {column!r} in the DataFrame (it has {names})")
        if direction_col is not None and len(pairing) < 3:
            raise ValueError("direction_col needs request_api_key_col and request_api_version_col too")
        frame_type = df.schema[frame_col].dataType
        if not isinstance(frame_type, T.BinaryType):
            raise ValueError(
                f"{frame_col!r} must be binary (whole size-prefixed frames), not {frame_type.simpleString()}"
            )
        self.columns = _Columns(tuple(kept), direction_col, request_api_key_col, request_api_version_col)
        self._types = {c: df.schema[c].dataType for c in pairing}
        # only what the decode reads travels to Python (each column once)
        self.source = df.select(*dict.fromkeys([*kept, frame_col, *pairing]))
        self.output_schema = T.StructType([*(df.schema[c] for c in kept), *spark_schema(decoded).fields])

    def only_message(self, api_key: int, kind: str, frame_col: str) -> None:
        """Let through to Python only rows that may be ``kind`` frames of ``api_key`` (the JVM
        drops the others first: they would be decoded for nothing and dropped after).

        The condition keeps every row the decoder would count as that message (a superset: the
        decoder still applies its own, exact test, so results do not change), from the same
        columns: a request's api key is the int16 at byte 4 of its frame, a response's is the
        request's key column. Where those columns are of types the decoder reads otherwise than
        Spark compares them (a direction that is not a string, a key that is not an integer),
        nothing is dropped.
        """
        c = self.columns
        frame = F.col(frame_col)
        # the request header's api key, as the decoder reads it: frames of at least 8 bytes
        own_key = (F.length(frame) >= 8) & (F.hex(F.substring(frame, 5, 2)) == f"{api_key:04X}")
        if c.direction is None:  # no direction column: every frame is read as a request
            if kind == "request":
                self.source = self.source.where(own_key)
            return
        if not isinstance(self._types[c.direction], T.StringType):
            return
        direction = F.col(c.direction)
        if kind == "request":
            self.source = self.source.where((direction == "request") & own_key)
            return
        assert c.request_api_key is not None
        if isinstance(self._types[c.request_api_key], T.IntegralType):
            self.source = self.source.where((direction == "response") & (F.col(c.request_api_key) == api_key))
