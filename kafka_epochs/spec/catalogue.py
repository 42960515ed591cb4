"""The Apache Kafka protocol catalogue: wire facts of every message, merged from several spec sets.

Apache Kafka publishes its protocol as JSON specs, one release at a time, and newer releases
drop old versions (Kafka 4.0 removed Produce v0-v2, Fetch v0-v3, ...) while adding new ones. The
catalogue is this project's own table of every version of every message that any of its inputs
defines. It keeps only what decides bytes or encoding (names, types, version ranges, flexibility,
tags, nullability, defaults, ignorability, common structs): no ``about`` text and no comments.

Inputs are given oldest first. For each version of a message the newest input that defines it
wins, so a version both define comes from the newer one; :func:`verify` proves afterwards, layout
by layout, that the merged message reads every version exactly as its input does.

The catalogue is one JSON file (see :func:`render_catalogue`); :func:`load_catalogue` turns it
into validated :class:`~kafka_epochs.spec.model.MessageSpec` objects for the generator.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_epochs.spec.layout import format_layout, wire_layout
from kafka_epochs.spec.loader import SpecError, load_spec, spec_from_dict, strip_comments
from kafka_epochs.spec.model import MessageSpec
from kafka_epochs.spec.versions import MAX_VERSION, NO_VERSIONS, Versions

__all__ = ["CatalogueError", "SpecSource", "build_catalogue", "load_catalogue", "render_catalogue", "verify"]

FORMAT = 1

#: Message attributes kept: everything that decides bytes, plus facts about versions.
_MESSAGE_KEYS = (
    "apiKey",
    "type",
    "name",
    "validVersions",
    "flexibleVersions",
    "latestVersionUnstable",
    "deprecatedVersions",
    "listeners",
)
#: Field attributes kept (``about``, ``entityType`` and ``zeroCopy`` never change a byte).
_FIELD_KEYS = (
    "name",
    "type",
    "versions",
    "nullableVersions",
    "taggedVersions",
    "tag",
    "flexibleVersions",
    "default",
    "ignorable",
    "mapKey",
)
_VERSION_KEYS = ("versions", "nullableVersions", "taggedVersions", "flexibleVersions")
_FIXED_KEYS = ("type", "tag", "default", "ignorable", "mapKey")


class CatalogueError(ValueError):
    """Inputs that cannot be merged into one message, or a catalogue that does not match them."""


@dataclass(frozen=True)
class SpecSource:
    """One input: a label (e.g. ``"kafka-3.9.0"``) and its directory of JSON specs."""

    label: str
    directory: Path

    def raw_specs(self) -> dict[str, dict[str, Any]]:
        """name -> the spec as parsed JSON (comments dropped), for every ``*.json`` in the directory."""
        out = {}
        for path in sorted(self.directory.glob("*.json")):
            raw = json.loads(strip_comments(path.read_text(encoding="utf-8")))
            out[raw["name"]] = raw
        return out


# -- building ------------------------------------------------------------------------------------


def build_catalogue(sources: Sequence[SpecSource]) -> dict[str, Any]:
    """Merge ``sources`` (oldest first) into the catalogue's JSON form."""
    if not sources:
        raise CatalogueError("a catalogue needs at least one input")
    merged: dict[str, dict[str, Any]] = {}
    origins: dict[str, list[list[str]]] = {}
    for source in sources:
        for name, raw in source.raw_specs().items():
            facts = _message_facts(raw)
            older = merged.get(name)
            merged[name] = facts if older is None else _merge_messages(older, facts)
            taken = Versions.parse(facts["validVersions"])
            # Earlier inputs keep only the versions this one does not redefine.
            kept = [
                [label, str(r)] for label, text in origins.get(name, []) for r in _minus(Versions.parse(text), taken)
            ]
            origins[name] = [*kept, [source.label, str(taken)]]
    messages = []
    for name in sorted(merged):
        messages.append({**merged[name], "origins": origins[name]})
    return {"format": FORMAT, "inputs": [s.label for s in sources], "messages": messages}


def _message_facts(raw: dict[str, Any]) -> dict[str, Any]:
    out = {key: raw[key] for key in _MESSAGE_KEYS if key in raw}
    out["fields"] = [_field_facts(f) for f in raw.get("fields", [])]
    if raw.get("commonStructs"):
        out["commonStructs"] = [_struct_facts(s) for s in raw["commonStructs"]]
    return out


def _struct_facts(raw: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {key: raw[key] for key in ("name", "versions", "deprecatedVersions") if key in raw}
    out["fields"] = [_field_facts(f) for f in raw.get("fields", [])]
    return out


def _field_facts(raw: dict[str, Any]) -> dict[str, Any]:
    out = {key: raw[key] for key in _FIELD_KEYS if key in raw}
    if "fields" in raw:
        out["fields"] = [_field_facts(f) for f in raw["fields"]]
    return out


# -- merging -------------------------------------------------------------------------------------


class _Merge:
    """Merges an older and a newer definition of one message: version ``v`` comes from the newer
    one when it defines ``v``, else from the older one."""

    def __init__(self, name: str, older: dict[str, Any], newer: dict[str, Any]) -> None:
        self.name = name
        self.older_valid = Versions.parse(older["validVersions"])
        self.newer_valid = Versions.parse(newer["validVersions"])
        self.older_flexible: str = older["flexibleVersions"]
        self.newer_flexible: str = newer["flexibleVersions"]
        self.valid = Versions(
            min(self.older_valid.low, self.newer_valid.low), max(self.older_valid.high, self.newer_valid.high)
        )

    def fail(self, where: str, why: str) -> CatalogueError:
        return CatalogueError(f"{self.name}: {where}: {why}")

    def versions(self, where: str, older: str | None, newer: str | None) -> str | None:
        """The merged range of a versions attribute (None when it is absent from both)."""
        if older is None and newer is None:
            return None
        old = Versions.parse(older) if older is not None else NO_VERSIONS
        new = Versions.parse(newer) if newer is not None else NO_VERSIONS
        present = [v for v in self.valid if (v in new if v in self.newer_valid else v in old and v in self.older_valid)]
        if not present:
            return "none"
        low, high = present[0], present[-1]
        if len(present) != high - low + 1:
            raise self.fail(where, f"versions {present} are not one range (older {older}, newer {newer})")
        # A range that reaches the message's newest version stays open, as the specs write it.
        opened = high >= self.valid.high and (new.open_ended or old.open_ended)
        return str(Versions(low, MAX_VERSION if opened else high))

    def fields(self, where: str, older: list[dict[str, Any]], newer: list[dict[str, Any]]) -> list[dict[str, Any]]:
        old_by_name = {f["name"]: f for f in older}
        new_by_name = {f["name"]: f for f in newer}
        # The newer order, with each older-only field placed after the field that precedes it in the
        # older spec. Versions taken from the newer input then read as it does; the older-only
        # versions are checked below (inputs may reorder fields that never share a version).
        order = [f["name"] for f in newer]
        previous: str | None = None
        for f in older:
            if f["name"] not in new_by_name:
                order.insert(order.index(previous) + 1 if previous is not None else 0, f["name"])
            previous = f["name"]
        merged = [self.field(f"{where}.{n}", old_by_name.get(n), new_by_name.get(n)) for n in order]
        merged = [f for f in merged if "versions" in f]  # a field no kept version has is dropped
        for version in self.older_valid:
            if version in self.newer_valid:
                continue
            if _names_at(merged, version) != _names_at(older, version):
                raise self.fail(where, f"v{version}: fields {_names_at(older, version)} cannot keep their order")
        return merged

    def field(self, where: str, older: dict[str, Any] | None, newer: dict[str, Any] | None) -> dict[str, Any]:
        base = newer if newer is not None else older
        assert base is not None
        if older is not None and newer is not None:
            for key in _FIXED_KEYS:
                if key in older and key in newer and older[key] != newer[key]:
                    raise self.fail(where, f"{key} differs: {older[key]!r} then {newer[key]!r}")
        out = {key: base[key] for key in _FIELD_KEYS if key in base and key not in _VERSION_KEYS}
        for key in _VERSION_KEYS:
            old, new = _get(older, key), _get(newer, key)
            if key == "flexibleVersions" and (old is None) != (new is None):
                # A field without its own flexibleVersions follows the message's.
                old = self.older_flexible if old is None and older is not None else old
                new = self.newer_flexible if new is None and newer is not None else new
            merged = self.versions(f"{where} {key}", old, new)
            if merged is not None and (merged != "none" or key == "flexibleVersions"):
                out[key] = merged
        out = {key: out[key] for key in _FIELD_KEYS if key in out}  # the specs' own key order
        if "fields" in base:
            out["fields"] = self.fields(where, _get(older, "fields") or [], _get(newer, "fields") or [])
        return out

    def common_structs(self, older: list[dict[str, Any]], newer: list[dict[str, Any]]) -> list[dict[str, Any]]:
        old_by_name = {s["name"]: s for s in older}
        new_by_name = {s["name"]: s for s in newer}
        names = [s["name"] for s in newer] + [s["name"] for s in older if s["name"] not in new_by_name]
        out = []
        for n in names:
            old, new = old_by_name.get(n), new_by_name.get(n)
            struct: dict[str, Any] = {"name": n}
            versions = self.versions(f"{n} versions", _get(old, "versions"), _get(new, "versions"))
            struct["versions"] = versions
            for key in ("deprecatedVersions",):
                value = _get(new, key) if new is not None else _get(old, key)
                if value is not None:
                    struct[key] = value
            struct["fields"] = self.fields(n, _get(old, "fields") or [], _get(new, "fields") or [])
            out.append(struct)
        return out


def _names_at(fields: list[dict[str, Any]], version: int) -> list[str]:
    return [f["name"] for f in fields if version in Versions.parse(f["versions"])]


def _get(raw: dict[str, Any] | None, key: str) -> Any:
    return None if raw is None else raw.get(key)


def _merge_messages(older: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
    name = newer["name"]
    for key in ("type", "apiKey"):
        if older.get(key) != newer.get(key):
            raise CatalogueError(f"{name}: {key} differs: {older.get(key)!r} then {newer.get(key)!r}")
    merge = _Merge(name, older, newer)
    top_from_newer = merge.newer_valid.high >= merge.older_valid.high
    latest = newer if top_from_newer else older
    out: dict[str, Any] = {key: newer[key] for key in ("apiKey", "type", "name") if key in newer}
    out["validVersions"] = str(merge.valid)
    out["flexibleVersions"] = merge.versions("flexibleVersions", older["flexibleVersions"], newer["flexibleVersions"])
    if latest.get("latestVersionUnstable"):
        out["latestVersionUnstable"] = True
    for key in ("deprecatedVersions", "listeners"):
        if key in latest:
            out[key] = latest[key]
    out["fields"] = merge.fields(name, older["fields"], newer["fields"])
    if older.get("commonStructs") or newer.get("commonStructs"):
        out["commonStructs"] = merge.common_structs(older.get("commonStructs", []), newer.get("commonStructs", []))
    return out


def _minus(a: Versions, b: Versions) -> list[Versions]:
    """``a`` without the versions of ``b``, as ranges."""
    parts = [Versions(a.low, min(a.high, b.low - 1)), Versions(max(a.low, b.high + 1), a.high)]
    return [p for p in parts if not p.empty] if not b.empty else [a]


# -- files ---------------------------------------------------------------------------------------


def render_catalogue(catalogue: dict[str, Any]) -> str:
    """The catalogue as JSON text, one message per line (small diffs when an input changes)."""
    head = {key: value for key, value in catalogue.items() if key != "messages"}
    lines = ["{", *(f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()), '  "messages": [']
    messages = catalogue["messages"]
    for i, message in enumerate(messages):
        lines.append("    " + json.dumps(message, separators=(",", ":")) + ("," if i < len(messages) - 1 else ""))
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


def read_catalogue(path: Path) -> dict[str, Any]:
    catalogue: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if catalogue.get("format") != FORMAT:
        raise CatalogueError(f"{path}: catalogue format {catalogue.get('format')!r}, expected {FORMAT}")
    return catalogue


def load_catalogue(path: Path) -> list[MessageSpec]:
    """The catalogue's messages as validated specs (by the same rules as spec files)."""
    specs = []
    for raw in read_catalogue(path)["messages"]:
        body = {key: value for key, value in raw.items() if key != "origins"}
        specs.append(spec_from_dict(body, f"{path.name}:{raw['name']}"))
    return specs


def origins(path: Path) -> dict[str, list[tuple[str, str]]]:
    """name -> [(input label, version range it gave)], oldest first."""
    return {raw["name"]: [tuple(o) for o in raw["origins"]] for raw in read_catalogue(path)["messages"]}


# -- checking ------------------------------------------------------------------------------------


def verify(
    catalogue: Iterable[MessageSpec], sources: Sequence[SpecSource], load: Callable[[Path], MessageSpec] = load_spec
) -> int:
    """Check that every version of every input message has the same wire layout in the catalogue,
    where the input is the newest one defining that version. Returns how many layouts matched."""
    by_name = {spec.name: spec for spec in catalogue}
    checked = 0
    taken: dict[str, set[int]] = {}
    for source in reversed(sources):  # newest first: it owns the versions it defines
        for path in sorted(source.directory.glob("*.json")):
            try:
                theirs = load(path)
            except SpecError as e:
                raise CatalogueError(f"{source.label}: {e}") from None
            ours = by_name.get(theirs.name)
            if ours is None:
                raise CatalogueError(f"{theirs.name} ({source.label}) is missing from the catalogue")
            done = taken.setdefault(theirs.name, set())
            for version in theirs.versions:
                if version in done:
                    continue
                expected, got = wire_layout(theirs, version), wire_layout(ours, version)
                if expected != got:
                    raise CatalogueError(
                        f"{theirs.name} v{version} differs from {source.label}:\n"
                        f"{format_layout(expected)}\n--- catalogue ---\n{format_layout(got)}"
                    )
                done.add(version)
                checked += 1
    for name, spec in by_name.items():
        extra = set(spec.versions) - taken.get(name, set())
        if extra:
            raise CatalogueError(f"{name} has versions {sorted(extra)} that no input defines")
    return checked
