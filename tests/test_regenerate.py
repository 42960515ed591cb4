"""Generated code is committed and never edited: regenerating it must change nothing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from kafka_epochs.codegen.build import package_files, stale_files, write_package
from kafka_epochs.spec import load_specs

ROOT = Path(__file__).resolve().parent.parent


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
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})  # noqa: S102 - our own documentation
