"""The Spark job's defaults, in a module that imports nothing: the command line's parsers show
them without loading the job's own imports."""

from __future__ import annotations

__all__ = ["DEFAULT_MASTER", "DEFAULT_SPLIT_BYTES"]

DEFAULT_MASTER = "local[*]"

#: Uncompressed pcap and pcapng files larger than this are read in ranges by many tasks (``--split-mb``).
DEFAULT_SPLIT_BYTES = 256 << 20
