"""Value classes without :mod:`dataclasses`: equality, a repr and pickling from the slots.

What a small capture costs the command is mostly its start, and ``dataclasses`` was a third of
what the package added to Python's own: importing it imports :mod:`inspect` (and with it ``ast``,
``dis`` and ``tokenize``), and each dataclass compiles its methods from source as its module is
imported (``__init__``, ``__repr__``, ``__eq__``; a frozen one ``__setattr__``, ``__delattr__``
and ``__hash__`` too). With the 22 of the decode command's path, a capture of a dozen packets
took 17 ms more of CPU (53 ms against 36, in process; 27% more instructions). The events,
packets, exchanges and summaries on that path are these classes instead: each declares its
``__slots__`` and writes its ``__init__`` (the hot ones are built per packet, and a hand-written
``__init__`` is as fast as a generated one); the rest is written once, here.

A class's fields are its slots, in the order the class annotates them, and its ``__init__``
takes them in that order: ``==`` compares them (instances of the same class only), the repr shows them as a
dataclass's does, ``match`` takes them positionally, and pickling and :func:`copy.copy` rebuild
an instance with them. :func:`fields_of` gives them as a dict (what ``dataclasses.asdict`` gave,
one level deep) and :func:`replace` a copy with some changed (``dataclasses.replace``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

__all__ = ["FrozenValue", "Value", "fields_of", "replace", "slot_setters"]


class Value:
    """A mutable value (unhashable, as a dataclass with ``eq`` is unless frozen)."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    __hash__ = None  # type: ignore[assignment]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        slots: set[str] = set()
        annotated: list[str] = []
        for klass in reversed(cls.__mro__):
            own = klass.__dict__.get("__slots__", ())
            slots.update((own,) if isinstance(own, str) else own)
            annotated.extend(klass.__dict__.get("__annotations__", ()))  # noqa: RUF063 (inspect is what we avoid)
        cls._fields = tuple(dict.fromkeys(name for name in annotated if name in slots))
        cls.__match_args__ = cls._fields  # type: ignore[attr-defined,misc]

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self._fields])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __repr__(self) -> str:
        shown = ", ".join([f"{name}={getattr(self, name)!r}" for name in self._fields])
        return f"{type(self).__qualname__}({shown})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, self._values())


class FrozenValue(Value):
    """An immutable, hashable value: its ``__init__`` sets its fields with ``object.__setattr__``."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self._values())


def slot_setters(cls: type[FrozenValue], *names: str) -> tuple[Callable[[Any, Any], None], ...]:
    """The setters of the slots ``names`` of ``cls``, for a frozen value's ``__init__`` built
    often: a slot's own ``__set__`` costs half what ``object.__setattr__`` does, which first
    checks that the class's own ``__setattr__`` (the one refusing) is not being bypassed."""
    return tuple(cls.__dict__[name].__set__ for name in names)


def fields_of(value: Value) -> dict[str, Any]:
    """A value's fields by name, in order."""
    return dict(zip(value._fields, value._values(), strict=True))


#: (made after the class, so that its bound is the class, not a name typing would compile at import)
V = TypeVar("V", bound=Value)


def replace(value: V, **changes: Any) -> V:
    """A copy of ``value`` with the fields named in ``changes`` set to them."""
    unknown = changes.keys() - set(value._fields)
    if unknown:
        raise TypeError(f"{type(value).__name__} has no field {', '.join(sorted(unknown))}")
    return type(value)(**{**fields_of(value), **changes})
