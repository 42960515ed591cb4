"""A tiny indented-source builder for the code generators."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class Source:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def __call__(self, line: str = "") -> None:
        self.lines.append(("    " * self.depth + line) if line else "")

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        """``header`` (``if ...:``, ``else:``, ``for ...:``) and, indented under it, what the
        ``with`` body emits."""
        self(header)
        with self.indented():
            yield

    @contextmanager
    def indented(self) -> Iterator[None]:
        """One level deeper for what the ``with`` body emits (a function body after its header)."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    @contextmanager
    def else_block(self, opened: bool) -> Iterator[None]:
        """An ``else:`` block after an ``if`` the caller emitted when ``opened``, else no block:
        for code that runs unconditionally in one version and under a null check in another."""
        if opened:
            with self.block("else:"):
                yield
        else:
            yield

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"
