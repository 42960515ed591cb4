"""An HTML page as the report tests look at it: its ids, its tags, every reference out of it, its text."""

from __future__ import annotations

import re
from html.parser import HTMLParser


class Page(HTMLParser):
    """The parts of a page the tests look at: ids, every reference out of it, its text."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.tags: list[str] = []
        self.references: list[str] = []
        self.chunks: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name == "id" and value:
                self.ids.append(value)
            if name in ("src", "href", "xlink:href", "data") and value:
                self.references.append(value)

    def handle_data(self, data: str) -> None:
        self.chunks.append(data)

    @property
    def text(self) -> str:
        return re.sub(r"\s+", " ", " ".join(self.chunks))
