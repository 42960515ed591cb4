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
        self(header)
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"
