"""Read Kafka-style JSON message specs (JSON with ``//`` comments) into the validated model.

Every rule Kafka's own generator enforces is checked here, at load time, so that the code
generator can trust the model. A broken spec raises :class:`SpecError` naming the file, the
field (as a dotted path) and the rule that was broken.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kafka_epochs.spec.model import (
    ENTITY_TYPES,
    ZERO_UUID,
    FieldSpec,
    FieldType,
    Kind,
    MessageSpec,
    MessageType,
    StructDefault,
    StructSpec,
)
from kafka_epochs.spec.versions import NO_VERSIONS, Versions


class SpecError(ValueError):
    """A spec that breaks a rule of the format."""

    def __init__(self, source: str, where: str, rule: str) -> None:
        self.source = source
        self.where = where
        self.rule = rule
        super().__init__(f"{source}: {where}: {rule}" if where else f"{source}: {rule}")


_MESSAGE_KEYS = {
    "apiKey",
    "type",
    "name",
    "validVersions",
    "flexibleVersions",
    "fields",
    "commonStructs",
    "latestVersionUnstable",
    "deprecatedVersions",
    "listeners",
}
_REQUIRED_MESSAGE_KEYS = ("name", "type", "validVersions", "flexibleVersions")
_FIELD_KEYS = {
    "name",
    "type",
    "versions",
    "fields",
    "about",
    "nullableVersions",
    "taggedVersions",
    "tag",
    "flexibleVersions",
    "default",
    "ignorable",
    "mapKey",
    "entityType",
    "zeroCopy",
}
_COMMON_STRUCT_KEYS = {"name", "versions", "fields", "deprecatedVersions"}
_FIELD_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_STRUCT_NAME = re.compile(r"[A-Z][A-Za-z0-9]*")
_PRIMITIVES = {k.value: k for k in Kind if k not in (Kind.STRUCT, Kind.ARRAY)}
_INT_RANGES = {
    Kind.INT8: (-(1 << 7), (1 << 7) - 1),
    Kind.INT16: (-(1 << 15), (1 << 15) - 1),
    Kind.UINT16: (0, (1 << 16) - 1),
    Kind.INT32: (-(1 << 31), (1 << 31) - 1),
    Kind.UINT32: (0, (1 << 32) - 1),
    Kind.INT64: (-(1 << 63), (1 << 63) - 1),
}


def strip_comments(text: str) -> str:
    """Drop ``//`` comments outside string literals (the specs' only departure from JSON)."""
    out: list[str] = []
    i, n = 0, len(text)
    start = 0
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "/" and text.startswith("//", i):
            out.append(text[start:i])
            end = text.find("\n", i)
            i = start = n if end < 0 else end
            continue
        i += 1
    out.append(text[start:])
    return "".join(out)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        # Jackson lets a repeated key through and Kafka 3.9 ships one spec that repeats an identical
        # "versions"; a repeat that changes the value is a real mistake and is refused.
        if key in result and result[key] != value:
            raise ValueError(f"key {key!r} is given twice with different values")
        result[key] = value
    return result


def load_spec(path: str | Path) -> MessageSpec:
    """Load and validate one spec file."""
    path = Path(path)
    return parse_spec(path.read_text(encoding="utf-8"), source=path.name)


def load_specs(directory: str | Path) -> list[MessageSpec]:
    """Load every ``*.json`` spec in a directory, sorted by file name."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"spec directory {directory} does not exist")
    specs = [load_spec(p) for p in sorted(directory.glob("*.json"))]
    names: dict[str, str] = {}
    for spec in specs:
        if spec.name in names:
            raise SpecError(spec.source, "", f"message {spec.name} is also defined in {names[spec.name]}")
        names[spec.name] = spec.source
    return specs


def parse_spec(text: str, source: str = "<spec>") -> MessageSpec:
    """Parse spec text (JSON with ``//`` comments) into a validated :class:`MessageSpec`."""
    try:
        raw = json.loads(strip_comments(text), object_pairs_hook=_no_duplicate_keys)
    except ValueError as e:
        raise SpecError(source, "", f"not valid JSON: {e}") from None
    spec = spec_from_dict(raw, source)
    spec.history = leading_comment(text)
    return spec


def leading_comment(text: str) -> str:
    """The ``//`` comment lines before a spec's JSON, as text, without a license paragraph.

    Specs written the way Kafka's are open with a licence header and then say, version by
    version, what changed; that account is what the generated class documents.
    """
    lines: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("//"):
            if stripped:
                break
            lines.append("")  # a blank line between comments ends a paragraph too
            continue
        lines.append(stripped[2:].removeprefix(" ").rstrip())
    paragraphs, current = [], []
    for line in [*lines, ""]:
        if line:
            current.append(line)
        elif current:
            paragraphs.append(current)
            current = []
    licence_ends = [i for i, p in enumerate(paragraphs) if any("limitations under the License" in line for line in p)]
    if licence_ends:
        paragraphs = paragraphs[licence_ends[0] + 1 :]
    return "\n\n".join("\n".join(p) for p in paragraphs)


def spec_from_dict(raw: object, source: str = "<spec>") -> MessageSpec:
    """Validate an already-parsed spec (e.g. one entry of the protocol catalogue)."""
    return _SpecBuilder(source).message(raw)


class _SpecBuilder:
    def __init__(self, source: str) -> None:
        self.source = source
        self.common: dict[str, StructSpec] = {}
        self.struct_names: set[str] = set()

    def fail(self, where: str, rule: str) -> SpecError:
        return SpecError(self.source, where, rule)

    def versions(self, where: str, key: str, value: object, default: Versions | None = None) -> Versions:
        if value is None:
            if default is None:
                raise self.fail(where, f"'{key}' is required")
            return default
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise self.fail(where, f"'{key}' must be a version range string, not {value!r}")
        try:
            return Versions.parse(value)
        except ValueError as e:
            raise self.fail(where, f"'{key}': {e}") from None

    def check_keys(self, where: str, raw: object, allowed: set[str]) -> dict[str, Any]:
        if not isinstance(raw, dict):
            raise self.fail(where, f"expected a JSON object, got {type(raw).__name__}")
        unknown = sorted(set(raw) - allowed)
        if unknown:
            raise self.fail(where, f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")
        return raw

    def flag(self, where: str, raw: dict[str, Any], key: str) -> bool:
        value = raw.get(key, False)
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if not isinstance(value, bool):
            raise self.fail(where, f"'{key}' must be true or false, not {value!r}")
        return value

    # -- messages ---------------------------------------------------------------------------

    def message(self, raw: object) -> MessageSpec:
        raw = self.check_keys("message", raw, _MESSAGE_KEYS)
        for key in _REQUIRED_MESSAGE_KEYS:
            if key not in raw:
                raise self.fail("message", f"'{key}' is required")
        name = raw["name"]
        if not isinstance(name, str) or not _STRUCT_NAME.fullmatch(name):
            raise self.fail("message", f"invalid message name {name!r}")
        self.struct_names.add(name)  # the message's class: no struct may take its name
        try:
            mtype = MessageType(raw["type"])
        except ValueError:
            allowed = ", ".join(t.value for t in MessageType)
            raise self.fail(name, f"unknown message type {raw['type']!r} (allowed: {allowed})") from None
        valid = self.versions(name, "validVersions", raw["validVersions"])
        if valid.empty:
            raise self.fail(name, "validVersions must not be 'none'")
        flexible = self.versions(name, "flexibleVersions", raw["flexibleVersions"])
        if not flexible.empty and not flexible.open_ended:
            raise self.fail(name, f"flexibleVersions {flexible} must be 'none' or open-ended (N+)")
        api_key = raw.get("apiKey")
        if mtype in (MessageType.REQUEST, MessageType.RESPONSE):
            if not isinstance(api_key, int) or isinstance(api_key, bool) or not 0 <= api_key <= 0x7FFF:
                raise self.fail(name, f"a {mtype.value} needs an apiKey from 0 to 32767, got {api_key!r}")
        elif api_key is not None and (not isinstance(api_key, int) or isinstance(api_key, bool)):
            raise self.fail(name, f"apiKey must be an integer, got {api_key!r}")
        listeners = raw.get("listeners", [])
        if not isinstance(listeners, list) or not all(isinstance(x, str) for x in listeners):
            raise self.fail(name, "'listeners' must be a list of strings")
        deprecated = self.versions(name, "deprecatedVersions", raw.get("deprecatedVersions"), NO_VERSIONS)

        common_raw = raw.get("commonStructs", [])
        if not isinstance(common_raw, list):
            raise self.fail(name, "'commonStructs' must be a list")
        # Common structs may be used before they are defined, so register every name first.
        pending: list[tuple[StructSpec, list[Any]]] = []
        for cs in common_raw:
            cs = self.check_keys(f"{name}.commonStructs", cs, _COMMON_STRUCT_KEYS)
            cs_name = cs.get("name")
            if not isinstance(cs_name, str) or not _STRUCT_NAME.fullmatch(cs_name):
                raise self.fail(f"{name}.commonStructs", f"invalid struct name {cs_name!r}")
            self.claim_struct_name(cs_name, cs_name)
            cs_versions = self.versions(cs_name, "versions", cs.get("versions"))
            struct = StructSpec(
                cs_name,
                cs_versions,
                [],
                is_common=True,
                deprecated_versions=self.versions(
                    cs_name, "deprecatedVersions", cs.get("deprecatedVersions"), NO_VERSIONS
                ),
            )
            self.common[cs_name] = struct
            pending.append((struct, cs.get("fields", [])))

        fields = self.fields(name, raw["fields"], valid, flexible)
        for struct, fields_raw in pending:
            struct.fields = self.fields(struct.name, fields_raw, struct.versions, flexible)
            self.check_tags(struct.name, struct.fields)
        self.check_tags(name, fields)

        latest_unstable = self.flag(name, raw, "latestVersionUnstable")
        return MessageSpec(
            name=name,
            type=mtype,
            valid_versions=valid,
            flexible_versions=flexible,
            fields=fields,
            api_key=api_key,
            common_structs=self.common,
            latest_version_unstable=latest_unstable,
            deprecated_versions=deprecated,
            listeners=tuple(listeners),
            source=self.source,
        )

    def claim_struct_name(self, where: str, struct_name: str) -> None:
        if struct_name in self.struct_names:
            raise self.fail(where, f"struct {struct_name} is defined more than once")
        self.struct_names.add(struct_name)

    # -- fields -------------------------------------------------------------------------------

    def fields(self, parent: str, raw: object, parent_versions: Versions, flexible: Versions) -> list[FieldSpec]:
        if not isinstance(raw, list):
            raise self.fail(parent, "'fields' must be a list")
        result = [self.field(parent, f, parent_versions, flexible) for f in raw]
        seen: set[str] = set()
        for f in result:
            if f.name in seen:
                raise self.fail(f"{parent}.{f.name}", "duplicate field name")
            seen.add(f.name)
        return result

    def check_tags(self, where: str, fields: Iterable[FieldSpec]) -> None:
        tags: dict[int, str] = {}
        for f in fields:
            if f.tag is None:
                continue
            if f.tag in tags:
                raise self.fail(f"{where}.{f.name}", f"tag {f.tag} is already used by {tags[f.tag]}")
            tags[f.tag] = f.name
        for expected in range(len(tags)):
            if expected not in tags:
                raise self.fail(where, f"tags are not contiguous: tag {expected} is unused but tag {max(tags)} is")

    def field(self, parent: str, raw: object, parent_versions: Versions, flexible: Versions) -> FieldSpec:
        named = raw.get("name") if isinstance(raw, dict) else None
        label = named if isinstance(named, str) and _FIELD_NAME.fullmatch(named) else "<field>"
        raw = self.check_keys(f"{parent}.{label}", raw, _FIELD_KEYS)
        name = raw.get("name")
        if not isinstance(name, str) or not _FIELD_NAME.fullmatch(name):
            raise self.fail(f"{parent}.<field>", f"invalid field name {name!r}")
        where = f"{parent}.{name}"
        ftype = self.parse_type(where, raw.get("type"))
        tagged = self.versions(where, "taggedVersions", raw.get("taggedVersions"), NO_VERSIONS)
        versions = self.versions(where, "versions", raw.get("versions"), tagged if not tagged.empty else None)
        if versions.intersect(parent_versions).empty:
            # Kafka's generator lets this through, but such a field can never be on the wire:
            # it is always a typo in a version range.
            raise self.fail(where, f"versions {versions} never overlap its parent's versions {parent_versions}")
        nullable = self.versions(where, "nullableVersions", raw.get("nullableVersions"), NO_VERSIONS)
        if not nullable.empty and not ftype.can_be_nullable:
            raise self.fail(where, f"type {ftype} cannot be nullable")
        about = raw.get("about", "")
        if not isinstance(about, str):
            raise self.fail(where, "'about' must be a string")

        tag = raw.get("tag")
        if isinstance(tag, str) and tag.isdigit():
            tag = int(tag)  # Jackson accepts quoted numbers, and some of Kafka's specs quote tags
        if tag is not None:
            if not isinstance(tag, int) or isinstance(tag, bool) or tag < 0:
                raise self.fail(where, f"tag must be a non-negative integer, got {tag!r}")
            if tagged.empty:
                raise self.fail(where, "a field with a tag needs taggedVersions")
            if not tagged.open_ended:
                raise self.fail(where, f"taggedVersions {tagged} must be open-ended (N+)")
            if not versions.covers(tagged):
                raise self.fail(where, f"taggedVersions {tagged} must be a subset of versions {versions}")
            if not flexible.covers(tagged):
                raise self.fail(
                    where,
                    f"tagged field outside flexible versions: taggedVersions {tagged} "
                    f"is not within flexibleVersions {flexible}",
                )
            both = nullable.intersect(tagged)
            if not both.empty and both != tagged:
                raise self.fail(where, "either every tagged version must be nullable, or none")
        elif not tagged.empty:
            raise self.fail(where, "taggedVersions needs a tag")

        field_flexible = None
        if raw.get("flexibleVersions") is not None:
            field_flexible = self.versions(where, "flexibleVersions", raw["flexibleVersions"])
            if ftype.kind not in (Kind.STRING, Kind.BYTES):
                raise self.fail(where, "only string and bytes fields may override flexibleVersions")
        zero_copy = self.flag(where, raw, "zeroCopy")
        if zero_copy and ftype.kind is not Kind.BYTES:
            raise self.fail(where, "zeroCopy is only allowed on bytes fields")
        map_key = self.flag(where, raw, "mapKey")
        if map_key and tag is not None:
            raise self.fail(where, "a tagged field cannot be a map key")
        entity = raw.get("entityType")
        if entity is not None:
            if entity not in ENTITY_TYPES:
                raise self.fail(where, f"unknown entityType {entity!r} (allowed: {', '.join(ENTITY_TYPES)})")
            want = ENTITY_TYPES[entity]
            base = ftype.element if ftype.kind is Kind.ARRAY and ftype.element else ftype
            if want is not None and base.kind is not want:
                raise self.fail(where, f"entityType {entity} needs type {want.value}, not {ftype}")
            if entity == "unknown":
                entity = None

        spec = FieldSpec(
            name=name,
            type=ftype,
            versions=versions,
            about=about,
            nullable_versions=nullable,
            tagged_versions=tagged,
            tag=tag,
            flexible_versions=field_flexible,
            ignorable=self.flag(where, raw, "ignorable"),
            map_key=map_key,
            entity_type=entity,
            zero_copy=zero_copy,
        )
        spec.struct = self.field_struct(where, raw, ftype, versions, flexible)
        spec.default, spec.default_text = self.default(where, raw.get("default"), spec)
        return spec

    def parse_type(self, where: str, text: object) -> FieldType:
        if not isinstance(text, str) or not text:
            raise self.fail(where, f"'type' is required and must be a string, got {text!r}")
        if text.startswith("[]"):
            element = self.parse_type(where, text[2:])
            if element.kind is Kind.ARRAY:
                raise self.fail(where, f"arrays of arrays are not allowed ({text})")
            return FieldType(Kind.ARRAY, element=element)
        if text in _PRIMITIVES:
            return FieldType(_PRIMITIVES[text])
        if _STRUCT_NAME.fullmatch(text):
            return FieldType(Kind.STRUCT, struct_name=text)
        raise self.fail(where, f"unknown type {text!r}")

    def field_struct(
        self,
        where: str,
        raw: dict[str, Any],
        ftype: FieldType,
        versions: Versions,
        flexible: Versions,
    ) -> StructSpec | None:
        base = ftype.element if ftype.kind is Kind.ARRAY and ftype.element else ftype
        inline = raw.get("fields")
        if base.kind is not Kind.STRUCT:
            if inline:
                raise self.fail(where, f"a field of type {ftype} cannot have fields")
            return None
        struct_name = str(base.struct_name)
        if inline is None:
            if struct_name not in self.common:
                raise self.fail(where, f"unknown struct type {struct_name} (not inline and not a common struct)")
            return self.common[struct_name]
        if struct_name in self.common:
            raise self.fail(where, f"struct {struct_name} is both inline and a common struct")
        self.claim_struct_name(where, struct_name)
        fields = self.fields(where, inline, versions, flexible)
        self.check_tags(where, fields)
        return StructSpec(struct_name, versions, fields)

    def default(self, where: str, raw: object, spec: FieldSpec) -> tuple[object, str]:
        if raw is None:
            text = ""
        elif isinstance(raw, bool):
            text = "true" if raw else "false"
        elif isinstance(raw, (int, float)):
            text = str(raw)
        elif isinstance(raw, str):
            text = raw
        else:
            raise self.fail(where, f"default must be a string, number or boolean, got {raw!r}")
        kind = spec.type.kind

        def bad(why: str) -> SpecError:
            return self.fail(where, f"invalid default {text!r} for {spec.type} field: {why}")

        if text == "null" and kind in (Kind.STRING, Kind.BYTES, Kind.STRUCT, Kind.ARRAY, Kind.RECORDS):
            if not spec.nullable_versions.covers(spec.versions):
                raise bad("null needs the field to be nullable in all its versions")
            return None, text
        if kind is Kind.BOOL:
            if text.lower() not in ("", "true", "false"):
                raise bad("expected true or false")
            return text.lower() == "true", text
        if kind in _INT_RANGES:
            if not text:
                return 0, text
            digits, base = (text[2:], 16) if text.startswith("0x") else (text, 10)
            try:
                value = int(digits, base)
            except ValueError:
                raise bad("not an integer") from None
            low, high = _INT_RANGES[kind]
            if not low <= value <= high:
                raise bad(f"out of range {low}..{high}")
            return value, text
        if kind is Kind.FLOAT64:
            if not text:
                return 0.0, text
            try:
                value_f = float(text)
            except ValueError:
                raise bad("not a number") from None
            if math.isnan(value_f) and text.lower() != "nan":
                raise bad("not a number")
            return value_f, text
        if kind is Kind.STRING:
            return text, text
        if kind is Kind.UUID:
            if not text:
                return ZERO_UUID, text
            return _parse_uuid_default(text, bad), text
        if kind in (Kind.BYTES, Kind.RECORDS):
            if text:
                raise bad("the only defaults allowed are empty and null")
            return (None if kind is Kind.RECORDS else b""), text
        if kind is Kind.STRUCT:
            if text:
                raise bad("the only defaults allowed are empty and null")
            return StructDefault.EMPTY_STRUCT, text
        if kind is Kind.ARRAY:
            if text:
                raise bad("the only defaults allowed are empty and null")
            return StructDefault.EMPTY_ARRAY, text
        raise bad("unsupported type")  # pragma: no cover - every kind is handled above


def _parse_uuid_default(text: str, bad: Any) -> uuid.UUID:
    # Kafka writes uuids as 22 characters of unpadded base64url.
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise bad("not base64url") from None
    if len(raw) != 16:
        raise bad("a uuid default is 16 bytes of base64url")
    return uuid.UUID(bytes=raw)
