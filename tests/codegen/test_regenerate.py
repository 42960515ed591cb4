"""Generated code is committed and never edited: regenerating it must change nothing."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from kafka_epochs.codegen.build import package_files, stale_files, write_package
from kafka_epochs.spec import load_specs

ROOT = Path(__file__).resolve().parents[2]


def test_committed_generated_code_matches_the_specs() -> None:
    assert stale_files(ROOT / "messages", ROOT / "kafka_epochs" / "messages") == []


def test_generation_is_deterministic(tmp_path: Path) -> None:
    first = write_package(ROOT / "messages", tmp_path / "a")
    second = write_package(ROOT / "messages", tmp_path / "b")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    specs = load_specs(ROOT / "messages")
    assert package_files(specs, "x") == package_files(specs, "x")


def test_generate_command_check_mode(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    cli = [sys.executable, "-m", "kafka_epochs.cli", "generate", "--specs", str(ROOT / "messages"), "--out", str(out)]
    assert subprocess.run([*cli, "--check"], capture_output=True, check=False).returncode == 1
    done = subprocess.run(cli, capture_output=True, text=True, check=True)
    assert re.match(r"generated \d+ message modules", done.stdout)
    assert subprocess.run([*cli, "--check"], capture_output=True, check=False).returncode == 0
    victim = next(out.glob("*Request.py"))
    victim.write_text(victim.read_text() + "# hand edit\n")
    assert subprocess.run([*cli, "--check"], capture_output=True, check=False).returncode == 1


def test_readme_example_runs() -> None:
    text = (ROOT / "README.md").read_text()
    # the Spark example runs in tests/spark/test_io_docs_examples.py, in a directory laid out for it
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "kafka_epochs.spark" not in b]
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


def test_generate_construct_backend(tmp_path: Path) -> None:
    from kafka_epochs.cli import main

    assert (
        main(
            [
                "generate",
                "--backend",
                "construct",
                "--specs",
                str(ROOT / "tests" / "specs" / "features"),
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    namespace: dict[str, Any] = {}
    exec((tmp_path / "FeatureTourRequest.py").read_text(), namespace)
    # The same hand-written v0 bytes as tests/wire/test_features.py::test_non_flexible_version_bytes.
    data = bytes.fromhex("00000002000100000000000000000000000000000000ffffffff0001610100000001000174000000000901")
    parsed = namespace["V0"].parse(data)
    assert parsed["id"] == 2 and parsed["owner"]["name"] == "a" and parsed["kept"] is True
    assert parsed["items"][0]["key"] == "t"
    assert namespace["V0"].build(parsed) == data


def test_a_generated_module_imports_each_runtime_module_once() -> None:
    # an import statement costs a call into the import system even for a module already loaded:
    # the names a module takes from one module come in one statement
    for path in [
        *(ROOT / "kafka_epochs" / "apache").glob("[A-Z]*.py"),
        *(ROOT / "kafka_epochs" / "messages").glob("[A-Z]*.py"),
    ]:
        modules = [node.module for node in ast.parse(path.read_text()).body if isinstance(node, ast.ImportFrom)]
        assert len(modules) == len(set(modules)), path.name
        assert "kafka_epochs.wire.primitives" in modules, path.name
