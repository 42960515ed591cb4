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
