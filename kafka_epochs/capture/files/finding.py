"""Which files under a directory are captures: one answer for every command and the Spark source.

``kafka-epochs decode``, ``audit``, ``spark-decode`` and the ``kafka-capture`` data source all
take a directory as "the captures under it"; they read the same files from the same directory,
at any depth, by their names' endings.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

__all__ = ["CAPTURE_SUFFIXES", "capture_files_under"]

#: The endings of a capture file's name: pcap and pcapng, gzipped or not.
CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap", ".pcap.gz", ".pcapng.gz", ".cap.gz")


def capture_files_under(directory: str) -> list[str]:
    """The capture files under ``directory``, at any depth, in the order ``sorted(Path.rglob())``
    gives (links to files followed, links to directories not), named as ``directory`` joined with
    their place under it.

    Raises PermissionError naming a directory under it that cannot be listed: its captures would
    be left out of what the caller reads, and nothing would say so (``rglob`` skips it)."""
    return sorted(_walk(directory), key=lambda p: p.split("/"))


def _walk(directory: str) -> Iterator[str]:
    try:
        with os.scandir(directory) as listing:
            entries = list(listing)
    except PermissionError:
        raise PermissionError(f"cannot list {directory}, so its captures cannot be read (permission denied)") from None
    for entry in entries:
        path = entry.name if directory == "." else f"{directory.removesuffix('/')}/{entry.name}"
        try:
            is_directory = entry.is_dir() and not entry.is_symlink()
        except OSError:
            is_directory = False
        if is_directory:
            yield from _walk(path)
        elif entry.name.endswith(CAPTURE_SUFFIXES) and entry.is_file():
            yield path
