"""A tiny indented-source builder for the code generators."""

from __future__ import annotations

from typing import Any


class Source:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def __call__(self, line: str = "") -> None:
        self.lines.append(("    " * self.depth + line) if line else "")

    def block(self, header: str) -> _Indented:
        """``header`` (``if ...:``, ``else:``, ``for ...:``) and, indented under it, what the
        ``with`` body emits."""
        self(header)
        return _Indented(self)

    def indented(self) -> _Indented:
        """One level deeper for what the ``with`` body emits (a function body after its header)."""
        return _Indented(self)

    def else_block(self, opened: bool) -> _Indented | _Level:
        """An ``else:`` block after an ``if`` the caller emitted when ``opened``, else no block:
        for code that runs unconditionally in one version and under a null check in another."""
        return self.block("else:") if opened else _SAME_LEVEL

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


# Plain context managers rather than @contextmanager generators: projections are emitted while a
# capture is decoded, a thousand blocks or more for a real one, and a generator-based block costs
# several calls more each.
class _Indented:
    """What a ``with`` body emits goes one level deeper."""

    __slots__ = ("source",)

    def __init__(self, source: Source) -> None:
        self.source = source

    def __enter__(self) -> None:
        self.source.depth += 1

    def __exit__(self, *exc: Any) -> None:
        self.source.depth -= 1


class _Level:
    """What a ``with`` body emits stays at the level it is."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


_SAME_LEVEL = _Level()
