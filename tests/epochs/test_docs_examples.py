"""The examples in docs/epochs.md run, and print what the page says they print."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "epochs.md"
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def test_docs_epochs_examples_run() -> None:
    # Only the ```python blocks, joined in page order: later examples reuse earlier names.
    source = "\n".join(PYTHON_BLOCK.findall(DOC.read_text()))
    test = doctest.DocTestParser().get_doctest(source, {}, "docs/epochs.md", str(DOC), 0)
    assert len(test.examples) > 30
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0
