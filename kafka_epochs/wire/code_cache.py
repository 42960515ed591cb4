"""Code generated at run time (JSON renderers, projections), compiled once per machine.

A command line run that meets forty apis compiles a few hundred small functions; compiling is
most of what making one costs. :func:`compile_cached` keeps each compiled code object on disk,
keyed by a digest of its source, its file label and the interpreter's version, the way
``__pycache__`` keeps modules: the next run reads it back (a ``marshal.loads``) instead of
compiling. The source is still generated each time: it is the key, so a cache entry can never
belong to other code, whatever version of kafka-epochs wrote it.

The cache lives beside ``Protocol.from_specs``' generated packages (``$KAFKA_EPOCHS_CACHE``, else
``$XDG_CACHE_HOME/kafka-epochs``, else ``~/.cache/kafka-epochs``), under ``code/``
(``KAFKA_EPOCHS_CODE_CACHE=0`` turns it off). It is an
optimisation only: a directory that cannot be made or written, or an entry that cannot be read,
means compiling as before. Like ``__pycache__``, it trusts whoever can write the user's cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
from pathlib import Path
from types import CodeType

__all__ = ["cache_root", "compile_cached"]

_TAG = sys.implementation.cache_tag or "python"
#: Bytecode is the interpreter build's own: its full version is part of every key.
_INTERPRETER = sys.version.encode()


def cache_root() -> Path:
    """The user's kafka-epochs cache directory (shared with ``Protocol.from_specs``)."""
    env = os.environ.get("KAFKA_EPOCHS_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafka-epochs"


def _code_directory() -> Path | None:
    """Where entries go: None when the cache is turned off (``KAFKA_EPOCHS_CODE_CACHE=0``)."""
    if os.environ.get("KAFKA_EPOCHS_CODE_CACHE", "1") == "0":
        return None
    return cache_root() / "code" / _TAG


def compile_cached(source: str, filename: str) -> CodeType:
    """``compile(source, filename, "exec")``, read from the disk cache when it was compiled before."""
    directory = _code_directory()
    if directory is None:
        return compile(source, filename, "exec")
    digest = hashlib.sha256(_INTERPRETER + b"\0" + filename.encode() + b"\0" + source.encode()).hexdigest()
    path = directory / digest[:2] / digest[2:]
    try:
        code = marshal.loads(path.read_bytes())
        if type(code) is CodeType:
            return code
    except (OSError, ValueError, EOFError, TypeError):
        pass  # not there yet, or unreadable: compile it
    code = compile(source, filename, "exec")
    _store(path, marshal.dumps(code))
    return code


def _store(path: Path, data: bytes) -> None:
    """Write an entry atomically (a concurrent reader sees all of it or none); failing is fine."""
    staging = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        staging.write_bytes(data)
        os.replace(staging, path)
    except OSError:  # a read-only or full disk: this run compiles, as every run would without a cache
        with contextlib.suppress(OSError):
            staging.unlink(missing_ok=True)
