"""Code generated at run time (JSON renderers, projections), compiled once per machine.

A command line run that meets forty apis compiles a few hundred small functions; compiling is
most of what making one costs. :func:`compile_cached` keeps each compiled code object on disk,
the way ``__pycache__`` keeps modules: the next run reads it back (a ``marshal.loads``) instead
of compiling. An entry holds its key whole (the interpreter's version, the file label and the
source, which is still generated each time) and is used only when that key is the lookup's:
its file name, a checksum of the key, only says where to look, so an entry can never stand for
other code, whatever version of kafka-epochs wrote it (two keys with one name take turns).

The cache lives beside ``Protocol.from_specs``' generated packages (``$KAFKA_EPOCHS_CACHE``, else
``$XDG_CACHE_HOME/kafka-epochs``, else ``~/.cache/kafka-epochs``), under ``code/``
(``KAFKA_EPOCHS_CODE_CACHE=0`` turns it off). It is an
optimisation only: a directory that cannot be made or written, or an entry that cannot be read,
means compiling as before. Like ``__pycache__``, it trusts whoever can write the user's cache.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
import zlib
from types import CodeType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["cache_root", "compile_cached"]

_TAG = sys.implementation.cache_tag or "python"
#: Bytecode is the interpreter build's own: its full version is part of every key.
_INTERPRETER = sys.version.encode()


def cache_root() -> Path:
    """The user's kafka-epochs cache directory (shared with ``Protocol.from_specs``)."""
    from pathlib import Path  # (only the generator's cache asks: a decode's start does without pathlib)

    return Path(_root())


def _root() -> str:
    env = os.environ.get("KAFKA_EPOCHS_CACHE")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kafka-epochs")


def compile_cached(source: str, filename: str) -> CodeType:
    """``compile(source, filename, "exec")``, read from the disk cache when it was compiled before."""
    if os.environ.get("KAFKA_EPOCHS_CODE_CACHE", "1") == "0":
        return compile(source, filename, "exec")
    key = _INTERPRETER + b"\0" + filename.encode() + b"\0" + source.encode()
    name = f"{zlib.crc32(key):08x}{len(key):x}"
    path = os.path.join(_root(), "code", _TAG, name[:2], name[2:])
    try:
        with open(path, "rb") as entry:
            stored = marshal.loads(entry.read())
        if type(stored) is tuple and len(stored) == 2 and stored[0] == key and type(stored[1]) is CodeType:
            return stored[1]
    except (OSError, ValueError, EOFError, TypeError):
        pass  # not there yet, or unreadable: compile it
    code = compile(source, filename, "exec")
    _store(path, marshal.dumps((key, code)))
    return code


def _store(path: str, data: bytes) -> None:
    """Write an entry atomically (a concurrent reader sees all of it or none); failing is fine."""
    staging = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(staging, "wb") as out:
            out.write(data)
        os.replace(staging, path)
    except OSError:  # a read-only or full disk: this run compiles, as every run would without a cache
        with contextlib.suppress(OSError):
            os.unlink(staging)
