"""The spec format: version ranges, the typed model and the validating loader."""

from kafka_epochs.spec.loader import SpecError, load_spec, load_specs, parse_spec
from kafka_epochs.spec.model import FieldSpec, FieldType, Kind, MessageSpec, MessageType, StructSpec
from kafka_epochs.spec.versions import Versions

__all__ = [
    "FieldSpec",
    "FieldType",
    "Kind",
    "MessageSpec",
    "MessageType",
    "SpecError",
    "StructSpec",
    "Versions",
    "load_spec",
    "load_specs",
    "parse_spec",
]
