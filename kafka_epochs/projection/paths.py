"""Field paths of a projection, resolved against a generated message class.

A path names one field: ``topics[].partitions[].leader_epoch``, ``error_code``,
``topics[].topic_id``. ``[]`` marks an array of structs the path walks into (it may be left out:
``topics.partitions.leader_epoch`` means the same); segments match a field's snake_case
attribute or its spec name. A path ends at a value: a primitive, or an array of primitives
(which comes back as a list). Structs are not values: ask for their fields.

Rows: the projection gives one row per element of its *innermost* array of structs, with the
values of the enclosing structs repeated on each of their elements' rows (a MetadataResponse
projected on ``topics[].name`` and ``topics[].partitions[].leader_epoch`` has one row per
partition, each carrying its topic's name). So the arrays a projection walks must nest in one
another: ``brokers[].host`` and ``topics[].name`` would need two row kinds, and are refused.
A projection that walks no array has one row per message.
"""

from __future__ import annotations

from typing import Any

from kafka_epochs.values import Value
from kafka_epochs.wire.schema import FieldInfo

__all__ = ["Node", "closest_in_tree", "has_path", "leaf_field", "resolve", "unknown_path", "walks_tree"]


class Node(Value):
    """The fields wanted from one struct (the message itself, a nested struct or an array element)."""

    __slots__ = ("array", "cls", "leaves", "structs")
    cls: Any
    leaves: dict[str, int]  #: field attr -> column index
    structs: dict[str, Node]  #: plain (non-array) struct fields
    array: tuple[str, Node] | None  #: the array of structs the rows continue into

    def __init__(
        self,
        cls: Any,
        leaves: dict[str, int] | None = None,
        structs: dict[str, Node] | None = None,
        array: tuple[str, Node] | None = None,
    ) -> None:
        self.cls = cls
        self.leaves = {} if leaves is None else leaves
        self.structs = {} if structs is None else structs
        self.array = array

    def wants(self, attr: str) -> bool:
        return attr in self.leaves or attr in self.structs or (self.array is not None and self.array[0] == attr)


def resolve(message: Any, paths: list[str] | tuple[str, ...]) -> tuple[Node, tuple[str, ...]]:
    """The tree of wanted fields of ``message`` and the paths written out in full (``[]`` marked).

    Raises ``ValueError`` naming the first path that does not resolve, or the two arrays that
    cannot share rows.
    """
    if not paths:
        raise ValueError("a projection needs at least one field path")
    root = Node(message)
    written: list[str] = []
    for column, path in enumerate(paths):
        canonical = _add(root, path, column)
        if canonical in written:
            raise ValueError(f"field path {path!r} is asked for twice")
        written.append(canonical)
    _check_one_chain(root)
    return root, tuple(written)


def _add(root: Node, path: str, column: int) -> str:
    segments = [s.strip() for s in path.split(".")]
    if not path or any(not s for s in segments):
        raise ValueError(f"empty segment in field path {path!r}")
    node = root
    canonical: list[str] = []
    for i, segment in enumerate(segments):
        name = segment.removesuffix("[]")
        f = _field(node.cls, name, path)
        last = i == len(segments) - 1
        into_structs = f.kind == "struct" or (f.kind == "array" and f.element == "struct")
        if segment.endswith("[]") and f.kind != "array":
            raise ValueError(f"{_where(path, canonical, f)} is not an array, so it takes no []")
        if last:
            if into_structs:
                raise ValueError(f"{_where(path, canonical, f)} holds structs: ask for their fields")
            node.leaves[f.attr] = column
            canonical.append(f.attr)  # an array of primitives is one value: a list
            break
        if not into_structs:
            raise ValueError(f"{_where(path, canonical, f)} is a {f.kind} value: it has no field {segments[i + 1]!r}")
        canonical.append(f.attr + ("[]" if f.kind == "array" else ""))
        if f.kind == "struct":
            node = node.structs.setdefault(f.attr, Node(f.struct))
            continue
        if node.array is None:
            node.array = (f.attr, Node(f.struct))
        elif node.array[0] != f.attr:
            raise ValueError(
                f"{path!r} walks {'.'.join(canonical)!r} beside {node.array[0] + '[]'!r}: rows are the elements "
                "of one innermost array, so the arrays a projection walks must nest in one another "
                "(use one projection per array)"
            )
        node = node.array[1]
    return ".".join(canonical)


def _check_one_chain(node: Node, prefix: str = "") -> None:
    """Refuse a tree where two branches walk arrays of structs (they would need two row kinds)."""
    found = _arrays_in(node, prefix)
    if len(found) > 1:
        raise ValueError(
            f"the projection walks {found[1][0]!r} beside {found[0][0]!r}: rows are the elements of one "
            "innermost array, so the arrays a projection walks must nest in one another "
            "(use one projection per array)"
        )
    for name, element in found:
        _check_one_chain(element, name + ".")


def _arrays_in(node: Node, prefix: str) -> list[tuple[str, Node]]:
    """The arrays of structs ``node`` walks, itself or through its plain struct fields."""
    found = [(f"{prefix}{node.array[0]}[]", node.array[1])] if node.array is not None else []
    for attr, child in node.structs.items():
        found += _arrays_in(child, f"{prefix}{attr}.")
    return found


def _field(cls: Any, name: str, path: str) -> FieldInfo:
    for f in cls._FIELDS:
        if name in (f.attr, f.name):
            return f
    known = ", ".join(f.attr for f in cls._FIELDS)
    raise ValueError(f"{cls.__name__} has no field {name!r} (in {path!r}); its fields: {known}")


def _where(path: str, walked: list[str], f: FieldInfo) -> str:
    return f"{'.'.join([*walked, f.attr])!r} (in {path!r})"


def leaf_field(message: Any, path: str) -> FieldInfo:
    """The field a resolved path (as :func:`resolve` writes it) ends at."""
    cls = message
    f: FieldInfo | None = None
    for segment in path.split("."):
        f = _field(cls, segment.removesuffix("[]"), path)
        cls = f.struct
    assert f is not None
    return f


def has_path(message: Any, path: str) -> bool:
    """Whether ``path`` names a value of ``message`` (a projection of it would be accepted)."""
    try:
        resolve(message, [path])
    except ValueError:
        return False
    return True


def walks_tree(tree: dict[str, Any], segments: list[str]) -> bool:
    """Whether ``segments`` walk ``tree`` (see ``codegen.build.paths_source``) as
    :func:`resolve` would walk one message's fields."""
    segment = segments[0]
    node = tree.get(segment.removesuffix("[]")) if segment else None
    if node is None:
        return False
    walks_array = segment.endswith("[]")
    if len(segments) == 1:  # a value: a primitive, or a list of them (which may take a [])
        return "leaf_array" in node or (not walks_array and "leaf" in node)
    kinds = ("array",) if walks_array else ("struct", "array")
    return any(kind in node and walks_tree(node[kind], segments[1:]) for kind in kinds)


def unknown_path(protocol: Any, path: str) -> str:
    """Why ``path`` is refused when no message of ``protocol`` has it: with the one likely meant."""
    meant = protocol.closest_field_path(path)
    hint = "" if meant is None else f" (did you mean {meant!r}?)"
    return f"no message of the {protocol.name} protocol has the field path {path!r}{hint}"


def closest_in_tree(tree: dict[str, Any] | None, path: str) -> str | None:
    """The path of ``tree`` a mistyped ``path`` most likely meant (None if a segment has none close):
    each segment matched ignoring case and underscores (``errorCode``, ``ERROR_CODE``), then by
    likeness, an index dropped (``topics[0]``), answered in attribute names with the ``[]`` of
    each array walked. For an error message; the answer walks the tree."""
    import difflib
    import re

    if tree is None:  # (a package generated before the tables existed)
        return None
    segments = [segment.strip() for segment in path.split(".")]
    found: list[str] = []
    node: dict[str, Any] = tree
    for at, segment in enumerate(segments):
        bare = re.sub(r"\[\d*\]$", "", segment)
        # attribute names first (snake_case, as lines print them), then spec names
        keys = sorted(node, key=lambda key: (key[:1].isupper(), key))
        squashed = bare.replace("_", "").lower()
        match = next((key for key in keys if key.replace("_", "").lower() == squashed), None)
        if match is None:
            attributes = {key.replace("_", ""): key for key in keys if not key[:1].isupper()}
            close = difflib.get_close_matches(squashed, attributes, n=1, cutoff=0.75)
            if not close:
                return None
            match = attributes[close[0]]
        kinds = node[match]
        if at == len(segments) - 1:
            if "leaf" not in kinds and "leaf_array" not in kinds:
                return None
            found.append(match)
        elif "array" in kinds:
            found.append(match + "[]")
            node = kinds["array"]
        elif "struct" in kinds:
            found.append(match)
            node = kinds["struct"]
        else:
            return None
    answer = ".".join(found)
    return answer if walks_tree(tree, found) else None
