"""Node.js Kafka clients for the loopback broker: kafkajs, installed on first use.

kafkajs is not a Python package, so ``pip install -e '.[dev]'`` cannot bring it. On first use,
:func:`ensure_kafkajs` runs ``npm install`` of the pinned versions into ``.cache/kafkajs`` in the
checkout (``.cache/`` is git-ignored, and ruff does not look there); later runs on the machine
reuse that install when every pinned version is in it. kafkajs-snappy (with snappyjs) comes
along: both are plain JavaScript, and ``--ignore-scripts`` makes sure that nothing builds or
downloads a binary. kafkajs's other codecs (LZ4, ZSTD) only exist as native plugins, so they are
not tested.

:class:`KafkaJS` runs ``kafkajs/produce.js`` (beside this file) in a node process per call: the
records go in as JSON on stdin, and the script's JSON result comes back on stdout.
:func:`kafkajs_or_skip` is what a fixture calls: the client, or a skip saying exactly why not
(no node, no npm, a node too old, or npm's own error).
"""

from __future__ import annotations

import base64
import functools
import json
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .drivers import Sent

REPO_ROOT = Path(__file__).resolve().parents[2]
KAFKAJS_DIR = REPO_ROOT / ".cache" / "kafkajs"
#: Exact versions, all pure JavaScript; snappyjs is named so that kafkajs-snappy's ``^0.6.0``
#: cannot drift.
PINNED = {"kafkajs": "2.2.4", "kafkajs-snappy": "1.1.0", "snappyjs": "0.6.1"}
PRODUCE_JS = Path(__file__).resolve().parent / "kafkajs" / "produce.js"
#: kafkajs 2.2.4's package.json asks for node >= 14.
MIN_NODE = 14
INSTALL_TIMEOUT_S = 180.0
#: Codecs kafkajs has here: GZIP is built in, Snappy comes from kafkajs-snappy.
KAFKAJS_CODECS = ("none", "gzip", "snappy")


class NodeUnavailable(Exception):
    """node, npm or the kafkajs install is missing or failed (the message says which and why)."""


class KafkaJSFailed(Exception):
    """produce.js ran but reported an error, timed out, or printed no result."""


# -- install -------------------------------------------------------------------------------------


def _installed_version(modules: Path, package: str) -> str | None:
    try:
        return str(json.loads((modules / package / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def installed(target: Path) -> bool:
    """Whether ``target`` holds every pinned package at its pinned version."""
    return all(_installed_version(target / "node_modules", name) == version for name, version in PINNED.items())


def _check_node() -> None:
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise NodeUnavailable(f"`{tool}` is not on PATH; kafkajs needs Node.js >= {MIN_NODE} and npm")
    done = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=30, check=False)
    text = done.stdout.strip()
    try:
        major = int(text.lstrip("v").split(".")[0])
    except ValueError:
        raise NodeUnavailable(f"`node --version` printed {text!r} ({done.stderr.strip()})") from None
    if major < MIN_NODE:
        raise NodeUnavailable(f"node {text} is older than kafkajs {PINNED['kafkajs']} supports (>= {MIN_NODE})")


def _npm_install(staging: Path, timeout: float) -> None:
    cmd = [
        "npm",
        "install",
        "--no-audit",
        "--no-fund",
        "--ignore-scripts",
        "--prefix",
        str(staging),
        *(f"{name}@{version}" for name, version in PINNED.items()),
    ]
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as e:
        raise NodeUnavailable(f"`{' '.join(cmd)}` did not finish within {timeout:.0f} s") from e
    if done.returncode != 0:
        # npm's warnings (about the user's .npmrc, say) and stack frames are noise next to its error.
        lines = [
            line
            for line in done.stderr.splitlines()
            if not line.startswith("npm warn") and not line.removeprefix("npm error").lstrip().startswith("at ")
        ]
        said = " | ".join(lines) or done.stdout.strip()
        raise NodeUnavailable(f"`{' '.join(cmd)}` exited {done.returncode}: {said[:2000]}")
    if not installed(staging):
        found = {name: _installed_version(staging / "node_modules", name) for name in PINNED}
        raise NodeUnavailable(f"npm install finished but installed {found}, not {PINNED}")


def ensure_kafkajs(target: Path = KAFKAJS_DIR, timeout: float = INSTALL_TIMEOUT_S) -> Path:
    """Install the pinned packages into ``target`` unless already there; its ``node_modules``.

    npm installs into a sibling staging directory that is then renamed into place, so an
    interrupted or concurrent run (pytest-xdist, two checkouts' CI) never leaves a half-filled
    ``target`` that would later pass for an install.
    """
    _check_node()
    if installed(target):
        return target / "node_modules"
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        _npm_install(staging, timeout)
        if target.exists() and not installed(target):
            shutil.rmtree(target)  # an old or broken install: replace it
        try:
            os.rename(staging, target)
        except OSError:
            if not installed(target):  # a lost race is fine only if the winner succeeded
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target / "node_modules"


@functools.cache
def _install_outcome() -> Path | str:
    """The node_modules directory, or why there is none; asked once per session, so that a
    failing install is not retried (and waited for) by every test."""
    try:
        return ensure_kafkajs()
    except (NodeUnavailable, OSError, subprocess.SubprocessError) as e:
        return f"kafkajs is not available: {e}"


def kafkajs_or_skip() -> KafkaJS:
    outcome = _install_outcome()
    if isinstance(outcome, str):
        pytest.skip(outcome)
    return KafkaJS(outcome)


# -- running produce.js --------------------------------------------------------------------------


@dataclass
class ProduceResult:
    """What produce.js reported: kafkajs's version, its RecordMetadata list (one entry per
    partition per round, none for acks=0) and, when asked, each topic's partition offsets."""

    version: str
    results: list[dict[str, Any]]
    offsets: dict[str, list[dict[str, Any]]] | None
    seconds: float


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _record_json(record: Sent) -> dict[str, Any]:
    return {
        "topic": record.topic,
        "partition": record.partition,
        "key": _b64(record.key),
        "value": _b64(record.value),
        "headers": [[name, _b64(value)] for name, value in record.headers],
    }


@dataclass(frozen=True)
class KafkaJS:
    """kafkajs from ``modules`` (a node_modules directory), one node process per call."""

    modules: Path

    def produce(
        self,
        bootstrap: str,
        records: Sequence[Sent],
        *,
        compression: str = "none",
        acks: int = -1,
        rounds: int = 1,
        idempotent: bool = False,
        auto_create: bool = False,
        offsets: bool = False,
        timeout: float = 10.0,
    ) -> ProduceResult:
        """Send ``records`` in ``rounds`` consecutive sendBatch calls; raises :class:`KafkaJSFailed`.

        ``timeout`` bounds each request inside node; the process gets three times that, plus
        node's start-up, before it is killed.
        """
        payload = {
            "bootstrap": bootstrap,
            "records": [_record_json(r) for r in records],
            "compression": compression,
            "acks": acks,
            "rounds": rounds,
            "idempotent": idempotent,
            "autoCreate": auto_create,
            "offsets": offsets,
            "timeoutMs": int(timeout * 1000),
        }
        # NODE_PATH: the script lives in the tests, its packages in the cache.
        env = {**os.environ, "NODE_PATH": str(self.modules), "KAFKAJS_NO_PARTITIONER_WARNING": "1"}
        start = time.monotonic()
        try:
            done = subprocess.run(
                ["node", str(PRODUCE_JS)],
                input=json.dumps(payload),
                capture_output=True,
                text=True,
                env=env,
                timeout=3 * timeout + 10,
                check=False,
            )
        except subprocess.TimeoutExpired as e:
            raise KafkaJSFailed(f"produce.js was still running after {3 * timeout + 10:.0f} s") from e
        seconds = time.monotonic() - start
        lines = done.stdout.strip().splitlines()
        try:
            result = json.loads(lines[-1])
        except (IndexError, ValueError):
            raise KafkaJSFailed(
                f"produce.js exited {done.returncode} with no JSON result; stdout {done.stdout!r}, "
                f"stderr {done.stderr!r}"
            ) from None
        if done.returncode != 0 or not result.get("ok"):
            raise KafkaJSFailed(f"produce.js exited {done.returncode}: {result.get('error')}; stderr {done.stderr!r}")
        return ProduceResult(result["kafkajs"], result["results"], result["offsets"], seconds)
