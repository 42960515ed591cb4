"""Independent Kafka codecs ("peers") behind one plain-value interface.

Our tests cross-check kafka-epochs against three other implementations:

``kio-0.6.5``
    The ``kio`` in the venv (generated from Kafka 4.x specs; Rust reader, Python
    writer). Runs in-process through :class:`kio_worker.KioCodec`.
``kio-0.5.0``
    The last pure-Python kio, generated from Kafka 3.x specs; the only peer with
    the ZooKeeper-era controller APIs (LeaderAndIsr, StopReplica, UpdateMetadata,
    ControlledShutdown). It has the same import name as 0.6.5, so it is installed
    on first use with ``pip install --no-deps --target .cache/kio-0.5.0`` and run
    in ONE long-lived ``python -s -S kio_worker.py`` subprocess (``-S``: no
    site-packages, so the venv's kio cannot shadow it; ``PYTHONPATH`` points at the
    private install; the worker reports ``kio.__file__``, which is checked).
``kafka-python-3.0.12``
    The JSON-schema driven ``ApiMessage`` / ``ApiData`` / ``ApiHeader`` classes of
    ``kafka.protocol`` (loaded from ``kafka/protocol/schemas/resources``, Kafka 4.x
    specs). The hand-written ``kafka.protocol.old`` Struct classes are not used.

Plain values
------------
A message body is a ``dict`` keyed by :func:`snake_case` of the Kafka field name,
holding exactly the fields of the requested version (tagged ones included, under
their normal names). Values: ``int``, ``bool``, ``float``, ``str``, ``bytes``
(``bytes`` and ``records`` fields), ``uuid.UUID`` (never ``None``; the zero uuid
is ``UUID(int=0)``), ``None`` for null, ``list`` for arrays, ``dict`` for structs.
An absent tagged struct decodes to the dict of its field defaults. Encoding is
strict: a missing field or a field the version lacks raises :class:`PeerError`.
Every peer error (bad input, unsupported pair, the peer's own exceptions) is a
:class:`PeerError`; the original exception is chained where there is one.

Quirks and limitations found while writing the adapters
-------------------------------------------------------
All peers
    * Unknown tagged fields cannot be expressed in a plain value. kio (both
      versions) raises ``KeyError`` on an unknown tag when decoding; kafka-python
      decodes them into ``obj.unknown_tags`` (``{"_<tag>": raw bytes}``), which this
      adapter drops, and never writes them back when encoding.
    * ``records`` fields are opaque bytes for every peer (no record-batch parsing).
    * uuid fields: kio and kafka-python both turn the zero uuid into ``None`` when
      decoding and write ``None`` as the zero uuid; the adapters map that back to
      ``UUID(int=0)``.

kio (0.6.5 and 0.5.0)
    * Field names: kio drops the ``Ms`` suffix of fields it types as
      ``timedelta_i32`` / ``timedelta_i64`` / ``datetime_i64`` (``throttle_time``,
      ``timeout``, ``log_append_time``, ``expiry_timestamp`` ...) and appends ``_``
      to names shadowing builtins (``id_``, ``type_``); the adapter undoes both.
      kio 0.6.5 also uses Kafka 4.x names for VoteRequest (``replica_epoch``,
      ``replica_id``, ``replica_directory_id`` for 3.9's ``candidate_*``), mapped by
      ``kio_worker.FIELD_ALIASES``.
    * Int types are phantom ``int`` subclasses (``i32``, ``BrokerId``, ...), strings
      may be ``TopicName``/``GroupId`` (``str`` subclasses), records are
      ``Records`` (a ``bytes`` subclass): all normalised to builtins here.
    * Error codes are ``ErrorCode`` enum members: an error code kio does not know
      (0.6.5 knows -1..133, 0.5.0 -1..127) cannot be encoded or decoded.
    * ``*_ms`` durations are ``datetime.timedelta``: an int64 duration beyond
      ~8.6e16 ms (``timedelta.max``) cannot be represented.
    * ``datetime_i64`` timestamps are timezone-aware ``datetime``: negative values
      are rejected, except -1 where kio types the field ``X | None`` (-1 <-> None,
      e.g. ``log_append_time_ms``). kio 0.5.0 additionally truncates decoded
      timestamps to whole SECONDS (``TZAware.truncate``), so e.g. 1234 ms decodes as
      1000 -- a genuine 0.5.0 decoding bug.
    * Arrays are tuples; entity structs are frozen dataclasses built per version.
    * Which pairs: kio 0.6.5 ships Kafka 4.x ranges (Produce 3-13, Fetch 4-18,
      Metadata 0-13, ...; 625 pairs, 80 of them not in Kafka 3.9); kio 0.5.0 ships
      exactly Kafka 3.9's 666 pairs (Produce 0-11, Fetch 0-17, StopReplica 0-4,
      LeaderAndIsr 0-7, UpdateMetadata 0-8, ControlledShutdown 0-3, ...).

kafka-python
    * Attribute names come from its own ``underscore_name`` rule (``TopicID`` ->
      ``topic_i_d``); some fields are renamed/retyped by ``json_patch`` (Metadata-
      and DescribeCluster-Response ``*AuthorizedOperations`` -> ``authorized_operations``
      as a ``set`` of bit numbers, ``None`` for ``INT32_MIN``). The adapter re-reads
      the unpatched JSON to recover the spec names and converts the sets back to
      int32.
    * A tagged struct field is ``None`` when absent and is written whenever it is
      not ``None`` (kafka-python compares with ``None``, not with the struct's
      defaults), so the adapter passes ``None`` when the plain dict equals the
      defaults. Nested tagged fields inside a tagged struct are always written as
      an empty tag section by kafka-python.
    * ``ApiMessage`` classes accept every version from 0, although the bundled 4.x
      JSON says e.g. ``ProduceRequest`` 3-13: kafka-python deliberately ignores the
      minimum so it can talk to old brokers, and its JSON keeps the old versions'
      field ranges (checked equal to Kafka 3.9's for every version 3.9 has), so
      ``supports()`` reports 0..max. Data/header classes use their ``validVersions``.
    * ``ApiVersionsResponse.decode`` silently decodes the body as v0 when
      ``error_code != 0``; the adapter calls the compiled per-version decoder
      directly (which also lets it check that all bytes were consumed).
    * Encoding returns a ``bytearray``; converted to ``bytes``.
    * 536 pairs: 108 messages (client APIs, ``ConsumerProtocol*``, headers), 496 of
      the pairs in Kafka 3.9.

How far the peers agree (``test_peers_selfcheck.py`` keeps this true)
------------------------------------------------------------------
With a generated value that sets every field, and again with every tagged field
at its default, each pair of peers produces identical bytes and decodes each
other's bytes identically on every (message, version) they share (kio 0.6.5 and
kafka-python: 490 pairs; kio 0.5.0 and kafka-python: 496; the two kios: 544 of
545). The exception is ``ReadShareGroupStateSummaryResponse`` v0, an unstable API
in 3.9 to which kio 0.6.5 (Kafka 4.x) adds ``LeaderEpoch``. Every peer's field
names, types, nullability and tagged-field defaults also match the Kafka 3.9 JSON
for each 3.9 pair it has.

Importing: under pytest (no ``tests/__init__.py``) this module is
``crosscheck.peers``; import it relatively from tests in this folder, so that only
one copy (and so one kio 0.5.0 worker) exists per session.
"""

from __future__ import annotations

import atexit
import copy
import dataclasses
import importlib
import io
import itertools
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import threading
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from . import kio_worker

Plain = dict[str, Any]

REPO_ROOT = Path(__file__).resolve().parents[2]
KIO050_DIR = REPO_ROOT / ".cache" / "kio-0.5.0"
KIO050_REQUIREMENTS = ("kio==0.5.0", "typing-extensions==4.16.0")
_WORKER_SCRIPT = Path(kio_worker.__file__).resolve()

_ZERO_UUID = uuid.UUID(int=0)
_INT32_MIN = -(2**31)


class PeerError(Exception):
    """A peer refused or failed to encode/decode (or does not know the pair)."""


class PeerUnavailable(PeerError):
    """The peer cannot be used here (e.g. kio 0.5.0 could not be installed)."""


@runtime_checkable
class Peer(Protocol):
    name: str

    def supports(self, message_name: str, version: int) -> bool: ...

    def encode(self, message_name: str, version: int, plain: Plain) -> bytes: ...

    def decode(self, message_name: str, version: int, data: bytes) -> Plain: ...


@dataclasses.dataclass(frozen=True, slots=True)
class FieldShape:
    """What a peer believes a field looks like (for generating sample values).

    ``kind`` is a Kafka primitive type name (``int8`` ... ``float64``, ``bool``,
    ``string``, ``bytes``, ``records``, ``uuid``) or ``struct``; for arrays it is
    the element kind and ``array`` is true. ``default`` is only filled in for
    tagged fields: the plain value the peer leaves out of the tag section.
    """

    name: str
    kind: str
    array: bool = False
    nullable: bool = False
    tagged: bool = False
    default: Any = None
    fields: tuple[FieldShape, ...] = ()

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FieldShape:
        return cls(
            name=d["name"],
            kind=d["kind"],
            array=d["array"],
            nullable=d["nullable"],
            tagged=d["tagged"],
            default=d["default"],
            fields=tuple(cls.from_dict(sub) for sub in d["fields"]),
        )


_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(kafka_name: str) -> str:
    """``ThrottleTimeMs`` -> ``throttle_time_ms``, ``isKRaftController`` ->
    ``is_k_raft_controller``, ``TopicID`` -> ``topic_id``."""
    return _SNAKE.sub("_", kafka_name).lower()


def _fail(peer: str, op: str, name: str, version: int, exc: BaseException) -> PeerError:
    return PeerError(f"{peer} {op} {name} v{version}: {type(exc).__name__}: {exc}")


# -- kio 0.6.5 (in-process) -------------------------------------------------------


class KioPeer:
    """kio from the running interpreter (the venv's 0.6.5)."""

    name = "kio-0.6.5"
    expected_version = "0.6.5"

    def __init__(self) -> None:
        self._codec: kio_worker.KioCodec | None = None

    @property
    def codec(self) -> kio_worker.KioCodec:
        if self._codec is None:
            codec = kio_worker.KioCodec()
            if codec.kio_version != self.expected_version:
                raise PeerUnavailable(f"expected kio {self.expected_version}, found {codec.kio_version}")
            self._codec = codec
        return self._codec

    def supports(self, message_name: str, version: int) -> bool:
        return self.codec.supports(message_name, version)

    def pairs(self) -> list[tuple[str, int]]:
        return self.codec.pairs()

    def encode(self, message_name: str, version: int, plain: Plain) -> bytes:
        try:
            return self.codec.encode(message_name, version, plain)
        except Exception as exc:
            raise _fail(self.name, "encode", message_name, version, exc) from exc

    def decode(self, message_name: str, version: int, data: bytes) -> Plain:
        try:
            return self.codec.decode(message_name, version, bytes(data))
        except Exception as exc:
            raise _fail(self.name, "decode", message_name, version, exc) from exc

    def shape(self, message_name: str, version: int) -> tuple[FieldShape, ...]:
        try:
            return tuple(FieldShape.from_dict(d) for d in self.codec.shape(message_name, version))
        except Exception as exc:
            raise _fail(self.name, "shape", message_name, version, exc) from exc


# -- kio 0.5.0 (subprocess) --------------------------------------------------------


def _kio050_installed(target: Path) -> bool:
    return (
        (target / "kio" / "__init__.py").is_file()
        and (target / "kio-0.5.0.dist-info").is_dir()
        and (target / "typing_extensions.py").is_file()
    )


def ensure_kio050(target: Path = KIO050_DIR) -> Path:
    """Install kio 0.5.0 (and its one pure-Python dependency) into ``target``.

    Installs into a sibling temporary directory and renames it into place, so an
    interrupted or concurrent install never leaves a half-populated ``target``.
    """
    if _kio050_installed(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    cmd = [
        sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        "--no-deps", "--no-compile", "--target", str(staging), *KIO050_REQUIREMENTS,
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    try:
        if done.returncode != 0 or not _kio050_installed(staging):
            raise PeerUnavailable(f"could not install kio 0.5.0: {done.stderr.strip() or done.stdout.strip()}")
        if target.exists() and not _kio050_installed(target):
            shutil.rmtree(target)
        try:
            os.rename(staging, target)
        except OSError:
            if not _kio050_installed(target):  # lost a race only if the winner succeeded
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


class KioSubprocessPeer:
    """kio 0.5.0 in a private ``--target`` install, served by one worker process."""

    name = "kio-0.5.0"
    expected_version = "0.5.0"

    def __init__(self, target: Path = KIO050_DIR) -> None:
        self.target = target
        self._proc: subprocess.Popen[bytes] | None = None
        self._pairs: frozenset[tuple[str, int]] = frozenset()
        self._lock = threading.Lock()
        self._broken: PeerUnavailable | None = None
        self._shapes: dict[tuple[str, int], tuple[FieldShape, ...]] = {}  # saves round trips

    def _start(self) -> subprocess.Popen[bytes]:
        if self._broken is not None:
            raise self._broken
        if self._proc is not None:
            return self._proc
        try:
            ensure_kio050(self.target)
            env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
            env["PYTHONPATH"] = str(self.target)
            # -s/-S: no user or venv site-packages, so only PYTHONPATH provides kio.
            proc = subprocess.Popen(
                [sys.executable, "-s", "-S", str(_WORKER_SCRIPT), "--preload"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                cwd=str(self.target),
            )
            assert proc.stdin is not None and proc.stdout is not None
            try:
                hello = kio_worker.read_frame(proc.stdout)
            except EOFError:
                proc.wait()
                raise PeerUnavailable(f"kio 0.5.0 worker exited ({proc.returncode}) before its handshake") from None
            tag, kio_file, kio_version, pairs = hello
            inside = Path(kio_file).resolve().is_relative_to(self.target.resolve())
            if tag != "hello" or not inside or kio_version != self.expected_version:
                proc.kill()
                raise PeerUnavailable(f"worker imported kio {kio_version} from {kio_file}, not {self.target}")
        except PeerUnavailable as exc:
            self._broken = exc
            raise
        self._pairs = frozenset((str(n), int(v)) for n, v in pairs)
        self._proc = proc
        atexit.register(self.close)
        return proc

    def close(self) -> None:
        """Stop the worker (EOF on its stdin); registered with ``atexit``."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is None:
            return
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()

    def _call(self, op: str, message_name: str, version: int, arg: object = None) -> Any:
        with self._lock:
            proc = self._start()
            assert proc.stdin is not None and proc.stdout is not None
            args = (op, message_name, version) if arg is None else (op, message_name, version, arg)
            try:
                kio_worker.write_frame(proc.stdin, args)
                reply = kio_worker.read_frame(proc.stdout)
            except (EOFError, OSError) as exc:
                self._proc = None  # the next call starts a fresh worker
                proc.kill()
                proc.wait()
                raise PeerError(f"{self.name} worker died during {op} {message_name} v{version}") from exc
        if reply[0] == "ok":
            return reply[1]
        _, exc_type, message = reply
        raise PeerError(f"{self.name} {op} {message_name} v{version}: {exc_type}: {message}")

    def pairs(self) -> list[tuple[str, int]]:
        with self._lock:
            self._start()
        return sorted(self._pairs)

    def supports(self, message_name: str, version: int) -> bool:
        with self._lock:
            self._start()
        return (message_name, version) in self._pairs

    def _check(self, message_name: str, version: int) -> None:
        if not self.supports(message_name, version):
            raise PeerError(f"{self.name} does not implement {message_name} v{version}")

    def encode(self, message_name: str, version: int, plain: Plain) -> bytes:
        self._check(message_name, version)
        data: bytes = self._call("encode", message_name, version, plain)
        return data

    def decode(self, message_name: str, version: int, data: bytes) -> Plain:
        self._check(message_name, version)
        plain: Plain = self._call("decode", message_name, version, bytes(data))
        return plain

    def shape(self, message_name: str, version: int) -> tuple[FieldShape, ...]:
        key = (message_name, version)
        shape = self._shapes.get(key)
        if shape is None:
            self._check(message_name, version)
            shape = tuple(FieldShape.from_dict(d) for d in self._call("shape", message_name, version))
            self._shapes[key] = shape
        return shape


# -- kafka-python ------------------------------------------------------------------


class KafkaPythonPeer:
    """kafka-python's JSON-schema classes (``kafka.protocol``)."""

    name = "kafka-python-3.0.12"
    expected_version = "3.0.12"

    def __init__(self) -> None:
        # message name -> (class, "message" | "data" | "header")
        self._classes: dict[str, tuple[Any, str]] | None = None
        self._names: dict[int, str] = {}  # id(field object) -> plain name
        self._named: set[type] = set()

    # discovery ---------------------------------------------------------------

    def _load(self) -> dict[str, tuple[Any, str]]:
        if self._classes is not None:
            return self._classes
        with warnings.catch_warnings():  # kafka-python's load_json uses deprecated importlib APIs
            warnings.simplefilter("ignore", DeprecationWarning)
            kafka = importlib.import_module("kafka")
            if kafka.__version__ != self.expected_version:
                raise PeerUnavailable(f"expected kafka-python {self.expected_version}, found {kafka.__version__}")
            api_data = importlib.import_module("kafka.protocol.api_data")
            api_header = importlib.import_module("kafka.protocol.api_header")
            api_message = importlib.import_module("kafka.protocol.api_message")

            for sub in ("admin", "consumer", "metadata", "producer"):
                package = importlib.import_module(f"kafka.protocol.{sub}")
                for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
                    importlib.import_module(info.name)
            importlib.import_module("kafka.protocol.sasl")
        resources = Path(importlib.import_module("kafka.protocol.schemas").__file__ or "").parent / "resources"
        classes: dict[str, tuple[Any, str]] = {}
        bases = ((api_message.ApiMessage, "message"), (api_data.ApiData, "data"), (api_header.ApiHeader, "header"))
        for base, kind in bases:
            for cls in _subclasses(base):
                json = vars(cls).get("_json")
                # skip per-version wrappers (no own _json) and classes whose schema
                # is not one of the bundled Kafka specs (e.g. StickyAssignorUserData)
                if json is None or not (resources / f"{cls.__name__}.json").is_file():
                    continue
                classes[json["name"]] = (cls, kind)
        self._classes = classes
        return classes

    def _versions(self, name: str) -> range:
        cls, kind = self._load()[name]
        lo, hi = cls._valid_versions
        if kind == "message":
            lo = 0  # see module docstring: kafka-python ignores the JSON minimum
        return range(lo, hi + 1)

    def pairs(self) -> list[tuple[str, int]]:
        return sorted((name, v) for name in self._load() for v in self._versions(name))

    def supports(self, message_name: str, version: int) -> bool:
        return message_name in self._load() and version in self._versions(message_name)

    def _lookup(self, message_name: str, version: int) -> tuple[Any, str]:
        if not self.supports(message_name, version):
            raise PeerError(f"{self.name} does not implement {message_name} v{version}")
        cls, kind = self._load()[message_name]
        if cls not in self._named:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                spec = _kp_schemas().load_json(cls.__name__)
            self._name_fields(cls._struct._fields, spec["fields"])
            self._named.add(cls)
        return cls, kind

    def _name_fields(self, fields: Any, json_fields: list[dict[str, Any]]) -> None:
        """Spec names from the unpatched JSON (json_patch renames some fields)."""
        schemas = _kp_schemas()

        if len(fields) != len(json_fields):
            raise PeerError(f"{self.name}: patched schema does not line up with its JSON")
        for field, spec in zip(fields, json_fields, strict=True):
            self._names[id(field)] = snake_case(spec["name"])
            if isinstance(field, schemas.StructArrayField):
                self._name_fields(field.array_of._fields, spec["fields"])
            elif isinstance(field, schemas.StructField):
                self._name_fields(field._fields, spec["fields"])

    @staticmethod
    def _flexible(klass: Any, version: int) -> bool:
        flexible = klass._flexible_versions
        return flexible is not None and flexible[0] <= version <= flexible[1]

    # encode ------------------------------------------------------------------

    def encode(self, message_name: str, version: int, plain: Plain) -> bytes:
        cls, kind = self._lookup(message_name, version)
        try:
            obj = self._build(cls._struct, cls, plain, version, message_name)
            if kind == "message":
                data = obj.encode(version=version)
            elif kind == "data":
                data = obj.encode(version=version, header=False)
            else:  # headers pick their version from the flexible flag
                flexible = self._flexible(cls, version)
                if version != (cls._flexible_versions[0] if flexible else cls._valid_versions[0]):
                    raise ValueError(f"kafka-python cannot encode {message_name} v{version}")
                data = obj.encode(flexible=flexible)
            return bytes(data)
        except PeerError:
            raise
        except Exception as exc:
            raise _fail(self.name, "encode", message_name, version, exc) from exc

    def _build(self, struct: Any, data_class: Any, plain: Any, version: int, where: str) -> Any:
        if not isinstance(plain, dict):
            raise PeerError(f"{self.name} {where}: expected a dict, got {type(plain).__name__}")
        fields = [f for f in struct._fields if f.for_version_q(version)]
        names = {self._names[id(f)]: f for f in fields}
        extra = sorted(set(plain) - set(names))
        if extra:
            raise PeerError(f"{self.name} {where}: fields not in v{version}: {extra}")
        kwargs = {}
        for pname, field in names.items():
            if pname not in plain:
                raise PeerError(f"{self.name} {where}: missing field {pname!r}")
            kwargs[field.name] = self._to_kp(field, plain[pname], version, f"{where}.{pname}")
        return data_class(version=version, **kwargs)

    def _to_kp(self, field: Any, value: Any, version: int, where: str) -> Any:
        schemas = _kp_schemas()

        if value is None:
            return None
        if isinstance(field, schemas.StructArrayField):
            return [self._build(field.array_of, field.data_class, item, version, where) for item in value]
        if isinstance(field, schemas.ArrayField):
            return [self._scalar_to_kp(field.array_of, item) for item in value]
        if isinstance(field, schemas.StructField):
            if field.tagged_field_q(version) and value == self._default_plain(field, version):
                return None
            return self._build(field, field.data_class, value, version, where)
        return self._scalar_to_kp(field, value)

    @staticmethod
    def _scalar_to_kp(field: Any, value: Any) -> Any:
        type_str = field.type_str
        if type_str == "uuid":
            return None if value == _ZERO_UUID else value
        if type_str == "bitfield":
            if value == _INT32_MIN:
                return None
            bits = value & 0xFFFFFFFF
            return {i for i in range(32) if bits >> i & 1}
        return value

    # decode ------------------------------------------------------------------

    def decode(self, message_name: str, version: int, data: bytes) -> Plain:
        cls, kind = self._lookup(message_name, version)
        try:
            flexible = self._flexible(cls, version)
            if kind == "message":
                decoder = cls._struct.compiled_decode_from(version, compact=flexible, tagged=flexible, data_class=cls)
                obj, pos = decoder(memoryview(bytes(data)), 0)
            else:
                stream = io.BytesIO(bytes(data))
                if kind == "data":
                    obj = cls.decode(stream, version=version, header=False)
                else:
                    if version != (cls._flexible_versions[0] if flexible else cls._valid_versions[0]):
                        raise ValueError(f"kafka-python cannot decode {message_name} v{version}")
                    obj = cls.decode(stream, flexible=flexible)
                pos = stream.tell()
            if pos != len(data):
                raise ValueError(f"consumed {pos} of {len(data)} bytes")
            return self._to_plain(cls._struct, obj, version)
        except PeerError:
            raise
        except Exception as exc:
            raise _fail(self.name, "decode", message_name, version, exc) from exc

    def _to_plain(self, struct: Any, obj: Any, version: int) -> Plain:
        return {
            self._names[id(f)]: self._from_kp(f, getattr(obj, f.name), version)
            for f in struct._fields
            if f.for_version_q(version)
        }

    def _from_kp(self, field: Any, value: Any, version: int) -> Any:
        schemas = _kp_schemas()

        if isinstance(field, schemas.StructArrayField):
            return None if value is None else [self._to_plain(field.array_of, v, version) for v in value]
        if isinstance(field, schemas.ArrayField):
            return None if value is None else [self._scalar_from_kp(field.array_of, v) for v in value]
        if isinstance(field, schemas.StructField):
            if value is None:
                return self._default_plain(field, version) if field.tagged_field_q(version) else None
            return self._to_plain(field, value, version)
        return self._scalar_from_kp(field, value)

    @staticmethod
    def _scalar_from_kp(field: Any, value: Any) -> Any:
        type_str = field.type_str
        if type_str == "uuid":
            return _ZERO_UUID if value is None else value
        if type_str == "bitfield":
            if value is None:
                return _INT32_MIN
            bits = sum(1 << i for i in value)
            return bits - (1 << 32) if bits >= 1 << 31 else bits
        if isinstance(value, (bytearray, memoryview)):
            return bytes(value)
        return value

    def _default_plain(self, struct: Any, version: int) -> Plain:
        """The plain value of a struct whose fields all hold their defaults."""
        schemas = _kp_schemas()

        out: Plain = {}
        for f in struct._fields:
            if not f.for_version_q(version):
                continue
            if isinstance(f, schemas.ArrayField):  # includes arrays of structs
                default = f.default
                value: Any = None if default is None else list(default)
            elif isinstance(f, schemas.StructField):
                nullable_default = f._json.get("default") == "null"
                value = None if nullable_default else self._default_plain(f, version)
            else:
                value = self._scalar_from_kp(f, f.default)
            out[self._names[id(f)]] = value
        return out

    # shape -------------------------------------------------------------------

    def shape(self, message_name: str, version: int) -> tuple[FieldShape, ...]:
        cls, _ = self._lookup(message_name, version)
        return self._shape(cls._struct, version)

    def _shape(self, struct: Any, version: int) -> tuple[FieldShape, ...]:
        schemas = _kp_schemas()
        out = []
        for f in struct._fields:
            if not f.for_version_q(version):
                continue
            sub: tuple[FieldShape, ...] = ()
            kind: str
            array: bool
            if isinstance(f, schemas.StructArrayField):
                kind, array, sub = "struct", True, self._shape(f.array_of, version)
            elif isinstance(f, schemas.ArrayField):
                kind, array = f.array_of.type_str, True
            elif isinstance(f, schemas.StructField):
                kind, array, sub = "struct", False, self._shape(f, version)
            else:
                kind, array = f.type_str, False
            out.append(
                FieldShape(
                    name=self._names[id(f)],
                    kind="int32" if kind == "bitfield" else kind,
                    array=array,
                    nullable=f.nullable_for_version_q(version),
                    tagged=f.tagged_field_q(version),
                    default=self._from_kp(f, f.default, version) if f.tagged_field_q(version) else None,
                    fields=sub,
                )
            )
        return tuple(out)


def _kp_schemas() -> Any:
    """``kafka.protocol.schemas`` (untyped, so reached through ``Any``)."""
    return importlib.import_module("kafka.protocol.schemas")


def _subclasses(cls: type) -> Iterator[type]:
    direct: list[type] = cls.__subclasses__()
    for sub in direct:
        yield sub
        yield from _subclasses(sub)


# -- module interface --------------------------------------------------------------

_PEERS: list[Any] = []


def peers() -> list[Peer]:
    """The three peers (singletons, so kio 0.5.0 gets one worker per session).

    Nothing is imported, installed or started until a peer is first used.
    """
    if not _PEERS:
        _PEERS.extend([KioPeer(), KioSubprocessPeer(), KafkaPythonPeer()])
    return list(_PEERS)


def peer(name: str) -> Any:
    """The peer called ``name`` (``kio-0.6.5``, ``kio-0.5.0``, ``kafka-python-3.0.12``)."""
    for p in peers():
        if p.name == name:
            return p
    raise KeyError(name)


def supported_pairs(peer: Peer) -> list[tuple[str, int]]:
    """Every (message name, version) ``peer`` implements, sorted.

    Request/response bodies plus the data (e.g. ``ConsumerProtocolAssignment``) and
    header (``RequestHeader``/``ResponseHeader``) schemas the peer ships.
    """
    pairs = getattr(peer, "pairs", None)
    if pairs is None:
        raise TypeError(f"cannot enumerate {peer!r}")
    result: list[tuple[str, int]] = pairs()
    return result


def sample_plain(peer: Any, message_name: str, version: int, *, tagged_defaults: bool = False) -> Plain:
    """A non-trivial plain value built from ``peer``'s own idea of the fields.

    Every field gets a distinct non-default value (one element per struct array,
    two per primitive array, no nulls), chosen so all three peers can represent
    it: int16 values are valid kio error codes, int32/int64 values are whole
    seconds in ms (kio 0.5.0 truncates timestamps), booleans are true. With
    ``tagged_defaults`` every tagged field holds the peer's default instead (so
    nothing should reach the tag sections).
    """
    counter = itertools.count(1)
    return _sample_struct(peer.shape(message_name, version), counter, tagged_defaults)


def _sample_struct(shapes: tuple[FieldShape, ...], counter: Iterator[int], tagged_defaults: bool) -> Plain:
    return {s.name: _sample_field(s, counter, tagged_defaults) for s in shapes}


def _sample_field(shape: FieldShape, counter: Iterator[int], tagged_defaults: bool) -> Any:
    if shape.tagged and tagged_defaults:
        return copy.deepcopy(shape.default)
    if shape.array:
        count = 1 if shape.kind == "struct" else 2
        return [_sample_item(shape, counter, tagged_defaults) for _ in range(count)]
    return _sample_item(shape, counter, tagged_defaults)


def _sample_item(shape: FieldShape, counter: Iterator[int], tagged_defaults: bool) -> Any:
    if shape.kind == "struct":
        return _sample_struct(shape.fields, counter, tagged_defaults)
    k = next(counter)
    kind = shape.kind
    if kind in ("int8", "int16", "uint8", "uint16"):
        return 1 + k % 100
    if kind in ("int32", "int64", "uint32", "uint64"):
        return 1000 * k
    if kind == "float64":
        return k + 0.5
    if kind == "bool":
        return True
    if kind == "string":
        return f"s{k}"
    if kind == "bytes":
        return b"b%d" % k
    if kind == "records":
        return b"\x00records%d" % k
    if kind == "uuid":
        return uuid.UUID(int=k)
    raise ValueError(f"no sample for kind {kind!r}")
