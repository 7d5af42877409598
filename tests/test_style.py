import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_clean():
    """The project keeps ruff clean (config in pyproject.toml)."""
    if shutil.which("ruff") is None:
        pytest.skip("ruff is not installed (it is in the [test] extra)")
    p = subprocess.run([sys.executable, "-m", "ruff", "check", "pcsos", "tests", "benchmarks",
                        "data"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
