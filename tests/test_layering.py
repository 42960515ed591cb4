"""design.md's layering, enforced: the contracts live in pyproject.toml ([tool.importlinter])."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_hold() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run(
        [str(lint), "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    declared = (ROOT / "pyproject.toml").read_text().count("[[tool.importlinter.contracts]]")
    assert "0 broken" in result.stdout and f"Contracts: {declared} kept" in result.stdout


def test_import_does_not_load_messages_or_codegen() -> None:
    code = "import sys, kafka_epochs; print(sorted(m for m in sys.modules if m.startswith('kafka_epochs')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['kafka_epochs', 'kafka_epochs.errors']"


def test_the_audit_and_its_report_data_load_without_matplotlib() -> None:
    # the spark extra alone must run the audit: matplotlib loads only when a page is drawn
    code = (
        "import sys, kafka_epochs, kafka_epochs.report, kafka_epochs.report.explain, kafka_epochs.report.strays\n"
        "try:\n    import kafka_epochs.spark.epoch_audit, kafka_epochs.spark.audit_report\n"
        "except ImportError:\n    pass  # no spark extra here: the report package alone is checked\n"
        "print('matplotlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_the_epochs_package_exports_every_name_lazily() -> None:
    """``kafka_epochs.epochs`` imports a module on first use of one of its names; every name in
    ``__all__`` resolves, to the object its module defines, and importing the error codes (as
    ``decode`` does) loads none of the rest."""
    import importlib
    import subprocess
    import sys

    from kafka_epochs import epochs

    assert set(epochs.__all__) == set(epochs._HOMES)
    for name in epochs.__all__:
        home = importlib.import_module(f"kafka_epochs.epochs.{epochs._HOMES[name]}")
        assert getattr(epochs, name) is getattr(home, name)
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, kafka_epochs.epochs.errors; print(sorted(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "kafka_epochs.epochs.errors" in loaded and "kafka_epochs.epochs.state" not in loaded


#: Modules the generator writes (their size is the specs', not a design choice).
GENERATED = ("kafka_epochs/messages/", "kafka_epochs/apache/", "kafka_epochs/typed_profiles.py")
MAX_MODULE_LINES = 600


def test_no_hand_written_module_is_over_600_lines() -> None:
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for path in (ROOT / "kafka_epochs").rglob("*.py")
        if not str(path.relative_to(ROOT)).startswith(GENERATED)
    }
    assert len(sizes) > 100  # the package was found
    assert {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES} == {}


def test_the_audit_and_the_command_line_run_without_pyspark() -> None:
    # the in-process engine is the default: its modules, and the command's, import no Spark
    code = (
        "import sys, kafka_epochs.cli.audit, kafka_epochs.audit.local, kafka_epochs.audit.incidents\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark' or m.startswith('kafka_epochs.spark')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
