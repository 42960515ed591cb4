"""``Protocol.message(name)`` is typed as the class it returns, and the types tell the truth."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_epochs import Protocol
from kafka_epochs.codegen.build import load_source
from kafka_epochs.codegen.typed import MODULE_FILE, typed_profiles_source
from kafka_epochs.typed_profiles import ApacheProtocol, AutoProfile, KipProtocol

ROOT = Path(__file__).resolve().parents[2]
TYPED = ROOT / "kafka_epochs" / MODULE_FILE


def _mypy(tmp_path: Path, code: str) -> subprocess.CompletedProcess[str]:
    source = tmp_path / "snippet.py"
    source.write_text(code)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), "--no-error-summary", str(source)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )


def test_committed_module_is_what_the_bundled_specs_generate() -> None:
    apache = (s.name for s in load_source(ROOT / "messages" / "apache" / "catalogue.json"))
    kip = (s.name for s in load_source(ROOT / "messages"))
    assert TYPED.read_text(encoding="utf-8") == typed_profiles_source(apache, kip)


@pytest.mark.parametrize(
    ("profile", "view", "package"),
    [("apache", "ApacheProtocol", "apache"), ("kip", "KipProtocol", None), ("auto", "AutoProfile", "apache")],
)
def test_each_overload_names_the_class_the_profile_returns(profile: str, view: str, package: str | None) -> None:
    proto = getattr(Protocol, profile)()
    runtime = {"ApacheProtocol": ApacheProtocol, "KipProtocol": KipProtocol, "AutoProfile": AutoProfile}[view]
    assert isinstance(proto, runtime)  # at run time the view is the profile's own class
    text = TYPED.read_text(encoding="utf-8")
    body = text.split(f"class {view}(", 1)[1].split("\n    class ", 1)[0]
    promised = dict(re.findall(r'Literal\["(\w+)"\]\) -> type\[(\w+)\]', body))
    assert set(promised) == set(proto.names())
    kip_names = {s.name for s in load_source(ROOT / "messages")}
    for name, alias in promised.items():
        expected = package or ("messages" if name in kip_names else "apache")
        assert alias == ("kip" if expected == "messages" else "apache") + f"_{name}"
        assert proto.message(name).__module__ == f"kafka_epochs.{expected}.{name}", name


def test_readme_use_block_type_checks_as_written(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    use = readme.split("## Use", 1)[1]
    block = re.search(r"```python\n(.*?)```", use, re.S)
    assert block is not None
    done = _mypy(tmp_path, block.group(1))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_types_are_the_classes_not_any(tmp_path: Path) -> None:
    code = """
from kafka_epochs import Protocol

kip = Protocol.kip().message("StopReplicaRequest")
reveal_type(kip)
reveal_type(Protocol.apache().message("StopReplicaRequest"))
reveal_type(Protocol.auto().message("FetchResponse"))
reveal_type(Protocol.kip().message("NotAMessage"))
kip(controller_id=1, no_such_field=2)
"""
    done = _mypy(tmp_path, code)
    out = done.stdout
    assert done.returncode == 1
    assert 'type[kafka_epochs.messages.StopReplicaRequest.StopReplicaRequest]"' in out
    assert 'type[kafka_epochs.apache.StopReplicaRequest.StopReplicaRequest]"' in out
    assert 'type[kafka_epochs.apache.FetchResponse.FetchResponse]"' in out
    assert 'type[kafka_epochs.wire.message.Message]"' in out  # an unknown name: the honest fallback
    assert 'Unexpected keyword argument "no_such_field"' in out
    assert "controller_id" not in out
