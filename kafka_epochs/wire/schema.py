"""Per-field metadata the generated classes carry, for the slow generic paths.

The hot encode/decode paths are generated straight-line code; ``to_dict``, ``from_dict``,
equality, ``repr`` and the checked (error-reporting) decoder walk these descriptors instead.
"""

from __future__ import annotations

from typing import Any

#: Marks a default that must be made fresh per object: an empty list, or a default struct.
EMPTY_ARRAY: Any = type("EmptyArray", (), {"__repr__": lambda self: "[]"})()
EMPTY_STRUCT: Any = type("EmptyStruct", (), {"__repr__": lambda self: "<default struct>"})()

Range = tuple[int, int]  # inclusive (low, high); empty when low > high
#: The open end of an "N+" version range (Kafka's Short.MAX_VALUE): a field present in every later version.
MAX_VERSION = 0x7FFF


class FieldInfo:
    """One field of a generated struct, as the spec describes it."""

    __slots__ = (
        "attr",
        "compact",
        "default",
        "element",
        "ignorable",
        "kind",
        "lazy",
        "name",
        "nullable",
        "struct",
        "tag",
        "tagged",
        "versions",
    )

    def __init__(
        self,
        attr: str,
        name: str,
        kind: str,
        versions: Range,
        *,
        element: str | None = None,
        struct: Any = None,
        nullable: Range = (1, 0),
        tagged: Range = (1, 0),
        tag: int = -1,
        compact: Range | None = None,
        default: Any = None,
        ignorable: bool = False,
        lazy: bool = False,
    ) -> None:
        self.attr = attr
        self.name = name
        self.kind = kind  # a spec type name ("int32", "string", ...), "struct" or "array"
        self.element = element  # for arrays: the element's kind
        self.struct = struct  # the class of a struct (or struct-array element)
        self.versions = versions
        self.nullable = nullable
        self.tagged = tagged
        self.tag = tag
        self.compact = compact  # per-field flexibleVersions override, else None
        self.default = default
        self.ignorable = ignorable
        # a struct most objects lack: kept in the slot ``_<attr>`` as None until its default is read
        self.lazy = lazy

    @property
    def slot(self) -> str:
        """Where an object keeps the field's value (None there, for a lazy field, is its default)."""
        return "_" + self.attr if self.lazy else self.attr

    def present(self, version: int) -> bool:
        return self.versions[0] <= version <= self.versions[1]

    def is_nullable(self, version: int) -> bool:
        return self.nullable[0] <= version <= self.nullable[1]

    def is_tagged(self, version: int) -> bool:
        return self.tagged[0] <= version <= self.tagged[1]

    def fresh_default(self) -> Any:
        if self.default is EMPTY_ARRAY:
            return []
        if self.default is EMPTY_STRUCT:
            return self.struct()
        return self.default


#: An empty version range (as ``kafka_epochs.wire.message.NO_VERSIONS``, which this layer cannot import).
_NONE = range(0)


class Shape:
    """What a generated struct or message is on the wire, without its code: the name, the field
    table and (for a message) the class attributes that say which versions exist.

    A package's ``_shapes.py`` makes them from the same facts as its message modules. Whatever
    reads a body by walking :class:`FieldInfo` tables alone (projections, the checked reader)
    takes a shape where it takes a class, and so does without importing the message's module
    and building its classes (``decode --fields`` of kafka-python's real-shaped capture: 4% of
    its instructions)."""

    _FIELDS: tuple[FieldInfo, ...]

    def __init__(
        self,
        name: str,
        api_key: int | None = None,
        message_type: str = "",
        valid: range = _NONE,
        flexible: range = _NONE,
        deprecated: range = _NONE,
        unstable: bool = False,
    ) -> None:
        self.__name__ = name
        self.API_KEY = api_key
        self.MESSAGE_TYPE = message_type
        self.VALID_VERSIONS = valid
        self.FLEXIBLE_VERSIONS = flexible
        self.DEPRECATED_VERSIONS = deprecated
        self.LATEST_VERSION_UNSTABLE = unstable
        self._FIELDS = ()

    def __repr__(self) -> str:
        return f"<shape of {self.__name__}>"
