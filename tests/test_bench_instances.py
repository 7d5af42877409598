"""benchmarks/instances.py: the code version a benchmark row records."""

import importlib.util
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _instances():
    spec = importlib.util.spec_from_file_location("instances", ROOT / "benchmarks" / "instances.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_code_version_names_a_checkout_other_than_the_benchmarks(tmp_path):
    # an editable install left pointing at a CI clone once made a benchmark row name the
    # wrong commit: the row must say which checkout's code ran
    inst = _instances()
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "-c",
           "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    (tmp_path / "pcsos").mkdir()
    (tmp_path / "pcsos" / "x.py").write_text("")
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "x"], check=True)
    head = subprocess.run(git[:3] + ["rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    other = inst.code_version(tmp_path / "pcsos")
    assert other.startswith(head) and str(tmp_path.resolve()) in other
    if (ROOT / ".git").exists():
        assert "pcsos from" not in inst.code_version(ROOT / "pcsos")
