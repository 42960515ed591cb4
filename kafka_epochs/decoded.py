"""A decoded frame, and how a frame's header and body are read into one.

:class:`Decoded` is what ``Protocol.decode_request``/``decode_response`` give. The reading itself
lives here: :func:`read_header` (the generated reader, then the explaining one, with client ids
that are not UTF-8 replaced unless strict), :func:`read_body` with one layout or, where two lay a
version out differently, :func:`pick_layout` (the one that consumes the frame exactly), and what
is tolerated on the way: trailing bytes (:func:`trailing_problem` tells a known client's habit
from a doubtful reading) and unstable versions (:func:`version_warnings`). :func:`frame_reader`
is the way nearly every frame goes, made once per (api key, version, kind).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kafka_epochs.errors import DecodeError
from kafka_epochs.wire.message import Message, read_replacing

if TYPE_CHECKING:
    from kafka_epochs.protocol import Protocol

__all__ = [
    "CLIENT_QUIRKS",
    "BodyAt",
    "BodyMemo",
    "BodyReader",
    "Decoded",
    "FramePlan",
    "FrameReader",
    "PlainRequest",
    "PlainResponse",
    "body_message",
    "frame_reader",
    "frame_readers",
    "pick_layout",
    "read_body",
    "read_header",
    "trailing_problem",
    "trailing_warning",
    "version_warnings",
]


#: Reads a body instead of ``Message.read``: (message class, frame, body offset, version) ->
#: (body, offset after it); raises DecodeError as ``read`` does.
BodyReader = Callable[[Any, bytes, int, int], tuple[Any, int]]


class Decoded:
    """A decoded request or response frame.

    ``profile`` names the layout that read the body (``"apache"``, ``"kip"`` or a spec
    directory). ``trailing`` counts bytes after the body, which a broker ignores and so do we
    unless asked to be strict; ``warnings`` says, in words, everything tolerated. ``shared``
    says the body object is also another frame's: read once for bytes that repeat
    (:class:`BodyMemo`, for a reader that changes no body). (A plain slotted class: the
    dataclass machinery would double the cost of importing this module.)
    """

    __slots__ = (
        "api_key",
        "api_version",
        "body",
        "header",
        "header_version",
        "message",
        "problem",
        "profile",
        "shared",
        "trailing",
        "warnings",
    )

    def __init__(
        self,
        header: Any,
        body: Any,
        api_key: int,
        api_version: int,
        header_version: int,
        trailing: int = 0,
        profile: str = "",
        warnings: list[str] | None = None,
        message: type | None = None,
        problem: str | None = None,
    ) -> None:
        self.header = header  # a RequestHeader or ResponseHeader object
        # the generated message object; with a body reader, what it gave (None: not read)
        self.body = body
        self.message = message if message is not None else type(body)  # the body's message class
        self.api_key = api_key
        self.api_version = api_version
        self.header_version = header_version
        self.trailing = trailing
        self.profile = profile
        self.warnings = warnings if warnings is not None else []
        # why the reading is doubtful though it completed (trailing bytes no client is known to send)
        self.problem = problem
        self.shared = False

    def __repr__(self) -> str:
        return (
            f"Decoded(header={self.header!r}, body={self.body!r}, api_key={self.api_key}, "
            f"api_version={self.api_version}, header_version={self.header_version}, trailing={self.trailing}, "
            f"profile={self.profile!r}, warnings={self.warnings!r}, problem={self.problem!r})"
        )

    def __eq__(self, other: object) -> bool:
        if type(other) is not Decoded:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    @property
    def correlation_id(self) -> int:
        return int(self.header.correlation_id)

    def to_dict(self) -> dict[str, Any]:
        """The header and body as JSON-ready dicts, each with only the fields its version carries."""
        return {"header": self.header.to_dict(self.header_version), "body": self.body.to_dict(self.api_version)}


def read_header(cls: Any, data: bytes, version: int, strict: bool, notes: list[str]) -> tuple[Any, int]:
    """A frame's header, read by its generated reader directly; whatever that reader does not
    take, ``Message.read`` reads again and explains (offset and field), and unless ``strict``
    a client id that is not UTF-8 is read with replacements and noted in ``notes``."""
    try:
        header, pos = cls._DECODERS[version](data, 4, len(data))
        if pos <= len(data):
            return header, pos
    except Exception:
        pass
    if strict:
        read: tuple[Any, int] = cls.read(data, 4, version)
        return read
    header, pos, replaced = read_replacing(cls, data, 4, version, len(data))
    notes.extend(replaced)
    return header, pos


class FramePlan:
    """How a protocol decodes frames of one (api key, version, kind).

    (A plain class, not a ``NamedTuple``: this module's annotations are strings, and typing
    compiles each string field of a ``NamedTuple`` when the class is made, at every start.)"""

    __slots__ = ("_body_class", "header_class", "header_version", "layout", "layouts", "name", "notes")

    def __init__(
        self, layouts: list[Protocol], header_version: int, header_class: Any, name: str, notes: tuple[str, ...]
    ) -> None:
        self.layouts = layouts  # the layouts that define it (several: the body chooses)
        self.header_version = header_version
        self.header_class = header_class
        self.layout = layouts[0]  # the first layout
        self.name = name  # the message's spec name (every layout names it alike)
        self.notes = notes  # warnings every decode of it carries (an unstable version)
        self._body_class: Any = None

    @property
    def body_class(self) -> Any:
        """The message class when one layout defines it (None: several do), its module loaded
        when first asked for: a reader of shapes (see :func:`body_message`) never asks."""
        if self._body_class is None and len(self.layouts) == 1:
            self._body_class = self.layout.message(self.name)
        return self._body_class


def body_message(layout: Protocol, name: str, body_reader: BodyReader | None) -> Any:
    """What a body reader is handed for the message ``name`` of ``layout``: its class, or for a
    reader that reads shapes (``reads_shapes``: projections, which walk field tables alone) its
    :class:`~kafka_epochs.wire.schema.Shape`, so that the message's module is never loaded."""
    if getattr(body_reader, "reads_shapes", False):
        return layout.shape(name)
    return layout.message(name)


def read_body(
    plan: FramePlan,
    kind: str,
    header: Any,
    header_version: int,
    data: bytes,
    pos: int,
    api_key: int,
    version: int,
    strict: bool,
    body_reader: BodyReader | None = None,
    warnings: list[str] | None = None,
) -> Decoded:
    """The body after a frame's header (``warnings``: what reading the header tolerated)."""
    if warnings is None:
        warnings = []
    if len(plan.layouts) == 1:
        chosen = plan.layout
        cls = plan.body_class if body_reader is None else body_message(chosen, plan.name, body_reader)
        if body_reader is not None:
            body, end = body_reader(cls, data, pos, version)
        elif strict:
            body, end = cls.read(data, pos, version)
        else:
            try:
                body, end = cls.read(data, pos, version)
            except DecodeError:  # strings that are not UTF-8 are read as Kafka's Java side reads them
                body, end, replaced = read_replacing(cls, data, pos, version, len(data))
                warnings.extend(replaced)
        notes: Sequence[str] = plan.notes
    else:
        chosen, cls, body, end = pick_layout(plan.layouts, plan.name, data, pos, version, strict, warnings, body_reader)
        notes = version_warnings(cls, version)
    trailing = len(data) - end
    problem = None
    if trailing:
        if strict:
            raise DecodeError(f"{trailing} trailing bytes after the body", end, "", f"{cls.__name__} v{version}")
        warnings.append(trailing_warning(trailing))
        problem = trailing_problem(api_key, kind, version, trailing)
    if notes:
        warnings.extend(notes)
    return Decoded(header, body, api_key, version, header_version, trailing, chosen.name, warnings, cls, problem)


#: A reader of whole frames of one (api key, version, kind): the frame decoded, or None where
#: the general way must read it (see :func:`frame_reader`).
FrameReader = Callable[[bytes], "Decoded | None"]
#: The body reader within a :data:`FrameReader`: (whole frame, where its body starts) -> (the
#: body, whether it is shared: see :class:`BodyMemo`), or None where the general way must read it.
BodyAt = Callable[[bytes, int], "tuple[Any, bool] | None"]


class BodyMemo:
    """The bodies of recent frames of one (api key, version, kind), by their bytes.

    A capture repeats many bodies byte for byte (every ApiVersions answer of a broker, a
    consumer's empty fetches, Metadata answers until the cluster changes), and the same bytes
    read as the same body: a repeat is not read again, and its body *object* is the one read
    before (shared: for a reader whose bodies nobody changes). Small bodies only, a few dozen
    at a time, and given up where bodies do not repeat."""

    __slots__ = ("bodies", "hits", "looks")

    MAX_BODY = 2048  # bytes: larger bodies rarely repeat, and hashing them would cost
    SIZE = 32  # bodies kept (the oldest goes first)
    TRIAL = 256  # looks after which a memo that hit fewer than one in ten is given up

    def __init__(self) -> None:
        self.bodies: dict[bytes, Any] = {}
        self.hits = self.looks = 0

    def worth_keeping(self) -> bool:
        return self.looks < self.TRIAL or self.hits * 10 >= self.looks

    def keep(self, key: bytes, body: Any) -> None:
        bodies = self.bodies
        if len(bodies) >= self.SIZE:
            del bodies[next(iter(bodies))]
        bodies[key] = body


class PlainResponse:
    """How a reader that cuts frames itself reads the response frames of one (api key, version)
    whose header is the plain one (a correlation id, and in header v1 no tagged field), which is
    nearly every response: only the body is read (:attr:`read_body`), from :attr:`body_start`;
    the header's values are the request's correlation id. The frame's own header must be looked
    at first: in header v1, ``frame[8] == 0`` (no tagged fields) makes it plain."""

    __slots__ = ("api_version", "body_start", "header_version", "message", "profile", "read_body")

    def __init__(self, read_body: BodyAt, plan: FramePlan, api_version: int, message: Any) -> None:
        self.read_body = read_body
        self.header_version = plan.header_version
        self.body_start = 8 if plan.header_version == 0 else 9  # after the tagged fields' count, 0
        self.message = message
        self.api_version = api_version
        self.profile = plan.layout.name


class PlainRequest:
    """How a reader that cuts frames itself reads the request frames of one (api key, version)
    whose header holds a client id (header v1, or v2, read this way when it carries no tagged
    field): only the body is read (:attr:`read_body`), from after the client id (and v2's empty
    count of tagged fields); the header's values are the frame's, at fixed places up to the
    client id. :meth:`decoded` makes what the frame's reader would have made, for whoever needs
    it (most lines do not)."""

    __slots__ = (
        "api_key",
        "api_version",
        "header_version",
        "message",
        "profile",
        "read_body",
        "read_header",
        "reads_body",
    )

    def __init__(self, read_body: BodyAt, plan: FramePlan, api_key: int, api_version: int, message: Any) -> None:
        self.read_body = read_body
        # False for a reader that looks at no body of it (--headers-only, or no field asked is
        # in it): read_body would give (None, False) for any body that starts in the frame
        self.reads_body = read_body is not _no_body
        self.header_version = plan.header_version
        self.read_header = plan.header_class._DECODERS[plan.header_version]
        self.message = message
        self.api_key = api_key
        self.api_version = api_version
        self.profile = plan.layout.name

    def decoded(self, frame: bytes, body: Any, shared: bool) -> Decoded:
        """The frame decoded as its reader decodes it, its body being ``body`` (as read)."""
        header = self.read_header(frame, 4, len(frame))[0]
        decoded = Decoded(
            header, body, self.api_key, self.api_version, self.header_version, 0, self.profile, [], self.message, None
        )
        if shared:
            decoded.shared = True
        return decoded


def frame_reader(
    plan: FramePlan, api_key: int, version: int, body_reader: BodyReader | None, memo: bool = False
) -> FrameReader | None:
    """What ``decode_request``/``decode_response`` make of the frames of one (api key, version,
    kind), for the way nearly every frame goes: one layout, header and body read by their readers
    at the first try, no byte left over, nothing to note. The reader gives None for any other
    frame (a body that does not read, trailing bytes: the general way reads it again, and
    explains or warns), and there is no reader (None) where the general way is the only one (two
    layouts, an unstable version, a body reader that cannot *try*). Frames must be ``bytes``.
    With ``memo``, a body whose bytes repeat a recent one's is that one's (:class:`BodyMemo`)."""
    readers = frame_readers(plan, api_key, version, body_reader, memo)
    return None if readers is None else readers[0]


def frame_readers(
    plan: FramePlan, api_key: int, version: int, body_reader: BodyReader | None, memo: bool = False
) -> tuple[FrameReader, BodyAt, Any] | None:
    """:func:`frame_reader`'s reader, the body reader it reads bodies with (one memo for both)
    and what its frames' ``Decoded.message`` is (see :func:`body_message`)."""
    attempt = None if body_reader is None else getattr(body_reader, "attempt", None)
    if len(plan.layouts) > 1 or plan.notes or (body_reader is not None and attempt is None):
        return None
    cls = plan.body_class if body_reader is None else body_message(plan.layout, plan.name, body_reader)
    header_version, profile = plan.header_version, plan.layout.name
    read_header = plan.header_class._DECODERS[header_version]
    read = cls._DECODERS[version] if attempt is None else None
    skips = getattr(body_reader, "skips", None)
    if skips is not None and skips(cls):  # a reader that looks at no body of the class (--headers-only)

        def decode_header(data: bytes) -> Decoded | None:
            try:
                header, pos = read_header(data, 4, len(data))
            except Exception:
                return None
            if pos > len(data):
                return None
            return Decoded(header, None, api_key, version, header_version, 0, profile, [], cls, None)

        return decode_header, _no_body, cls

    # a reader that makes its own per (class, version) (FieldsReader.quick) saves its steps per body
    make_quick = None if attempt is None else getattr(body_reader, "quick", None)
    quick = None if make_quick is None else make_quick(cls, version)
    bodies = BodyMemo() if memo else None

    def read_body(data: bytes, pos: int) -> tuple[Any, bool] | None:
        nonlocal bodies
        length = len(data)
        key = None
        try:
            if bodies is not None and 0 <= length - pos <= BodyMemo.MAX_BODY:  # (a header past the end: no)
                key = data[pos:]
                body = bodies.bodies.get(key, _NOT_KEPT)
                bodies.looks += 1
                if body is not _NOT_KEPT:
                    bodies.hits += 1
                    return body, True
            if read is not None:
                body, end = read(data, pos, length)
            else:
                got = attempt(cls, data, pos, version) if quick is None else quick(data, pos)  # type: ignore[misc]
                if got is None:
                    return None
                body, end = got
        except Exception:
            return None
        if end != length:
            return None
        if key is not None and bodies is not None:
            if bodies.worth_keeping():
                bodies.keep(key, body)
            else:
                bodies = None  # these bodies do not repeat: no more looks
        return body, False

    def decode(data: bytes) -> Decoded | None:
        try:
            header, pos = read_header(data, 4, len(data))
        except Exception:
            return None
        got = read_body(data, pos)
        if got is None:
            return None
        decoded = Decoded(header, got[0], api_key, version, header_version, 0, profile, [], cls, None)
        if got[1]:
            decoded.shared = True
        return decoded

    return decode, read_body, cls


def _no_body(data: bytes, pos: int) -> tuple[Any, bool] | None:
    """The body reader of a reader that reads no body: none read, a header that ends past the frame refused."""
    return None if pos > len(data) else (None, False)


_NOT_KEPT: Any = object()


def trailing_warning(count: int) -> str:
    return f"{count} trailing bytes after the body, ignored"


#: Trailing bytes real clients send and brokers ignore: (api key, kind) -> (the versions, at most
#: this many bytes). Seen in librdkafka 2.x's traffic: a Metadata v11-v13 request ends with 3 more
#: bytes, an AlterUserScramCredentials v0 request with 1.
CLIENT_QUIRKS: dict[tuple[int, str], tuple[range, int]] = {
    (3, "request"): (range(11, 14), 3),
    (51, "request"): (range(0, 1), 1),
}


def trailing_problem(api_key: int, kind: str, version: int, trailing: int) -> str | None:
    """None when ``trailing`` bytes after a body are a known client's habit (or there are none);
    else why the decode is doubtful: the body read, but the bytes left say it may have been read
    with the wrong layout (a KIP version of the message, a newer Kafka's) or from damaged bytes."""
    if not trailing:
        return None
    quirk = CLIENT_QUIRKS.get((api_key, kind))
    if quirk is not None and version in quirk[0] and trailing <= quirk[1]:
        return None
    return (
        f"{trailing} bytes left after the body, which no known client sends: the body may not have been "
        "read as its sender laid it out (another layout of this version, or damaged bytes)"
    )


def version_warnings(cls: type[Message], version: int) -> list[str]:
    """What every decode of ``cls`` at ``version`` should carry: an unstable version is one whose
    bytes a broker may lay out otherwise."""
    if cls.LATEST_VERSION_UNSTABLE and version == cls.VALID_VERSIONS.stop - 1:
        return [
            f"{cls.__name__} v{version} was unreleased (unstable) in the specs it comes from; "
            "a broker's bytes may differ"
        ]
    return []


def pick_layout(
    layouts: list[Protocol],
    name: str,
    data: bytes,
    pos: int,
    version: int,
    strict: bool,
    warnings: list[str],
    body_reader: BodyReader | None = None,
) -> tuple[Protocol, type[Message], Any, int]:
    """Read with every candidate layout (no error explanations on the way): the first that consumes
    the frame exactly wins; else, unless strict, the first that reads with bytes left over.

    A body reader with an ``attempt`` method (a projection's) tries the layouts itself, and the
    values compared are the ones it reads; any other tries them with the generated decoders and
    then reads the chosen one (a projection that misses would cost an explanation).
    """
    attempt = getattr(body_reader, "attempt", None)
    tries: list[tuple[Protocol, type[Message], Any, bool]] = []
    for layout in layouts:
        cls = body_message(layout, name, body_reader)
        got = None if attempt is None else attempt(cls, data, pos, version)
        # a reader that does not look at this body (None) cannot tell layouts apart: decoders can
        read = attempt is not None and (got is None or got[0] is not None)
        if not read:
            got = _attempt(layout.message(name), data, pos, version)
        tries.append((layout, cls, got, read))
    exact = [t for t in tries if t[2] is not None and t[2][1] == len(data)]
    partial = [t for t in tries if t[2] is not None]
    if exact or (partial and not strict):
        layout, cls, (body, end), read = (exact or partial)[0]
        others = [t[0].name for t in exact[1:] if not _same_values(_values(t[2][0]), _values(body))]
        if others:
            warnings.append(
                f"{cls.__name__} v{version} also reads exactly with the {', '.join(others)} layout, "
                f"with other values; read with {layout.name}'s"
            )
        if body_reader is not None and not read:
            body, end = body_reader(cls, data, pos, version)
        return layout, cls, body, end
    first = tries[0][1]
    # raises the explained DecodeError of the preferred layout
    first.read(data, pos, version) if body_reader is None else body_reader(first, data, pos, version)
    raise DecodeError(f"{first.__name__} v{version} does not read these bytes", pos, "")


def _values(body: Any) -> Any:
    """What two readings of a body are compared on: a message's fields, or a body reader's own
    values (columns) as they are."""
    to_dict = getattr(body, "to_dict", None)
    return body if to_dict is None else to_dict()


def _same_values(a: Any, b: Any) -> bool:
    """Whether two layouts' readings of one frame agree on every field both have (a field one
    layout adds inside an empty array, or outside its version, changes no value)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return all(_same_values(a[key], b[key]) for key in a.keys() & b.keys())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_values(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _attempt(cls: type[Message], data: bytes, pos: int, version: int) -> tuple[Any, int] | None:
    """One fast read, or None when the layout does not fit the bytes."""
    try:
        body, end = cls._DECODERS[version](data, pos, len(data))
    except Exception:
        return None
    return (body, end) if end <= len(data) else None


def reads_whole(plan: FramePlan, data: bytes, version: int, body_reader: BodyReader | None) -> bool:
    """Whether a response frame's body reads with ``plan`` at ``version`` (bytes may be left
    over), found without the explanation a failed read builds. True as well where this cannot be
    told cheaply (several layouts, a header that is not v0, a body reader that cannot *try*, a
    string that is not UTF-8, which a tolerant read replaces): the caller then reads and sees."""
    if len(plan.layouts) > 1 or plan.header_version != 0:
        return True
    if body_reader is not None:
        attempt = getattr(body_reader, "attempt", None)
        return (
            attempt is None or attempt(body_message(plan.layout, plan.name, body_reader), data, 8, version) is not None
        )
    cls = plan.body_class
    try:
        end = cls._DECODERS[version](data, 8, len(data))[1]
    except UnicodeDecodeError:
        return True
    except Exception:
        return False
    return bool(end <= len(data))


def checked_frame(frame: bytes | bytearray | memoryview) -> bytes:
    """A frame's bytes, or the DecodeError of a size prefix that is not the frame's."""
    data = frame if type(frame) is bytes else bytes(frame)
    if len(data) < 4:
        raise DecodeError("truncated: a frame starts with a 4-byte size", 0, "size")
    size = int.from_bytes(data[:4], "big", signed=True)
    if size != len(data) - 4:
        raise DecodeError(f"the size prefix says {size} bytes but {len(data) - 4} follow", 0, "size")
    return data
