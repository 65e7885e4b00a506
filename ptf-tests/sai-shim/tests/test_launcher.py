"""ptf under the launcher uses pre-registered modules instead of the test directory's files.

Needs the ptf package (pip install ptf); skipped without it. `ptf --list` loads every test module and lists
the test classes without touching interfaces, so no root or namespaces are needed.
"""

import os
import subprocess
import sys
import textwrap

import pytest

from lossless_sai import launcher

SHIM_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def have_ptf():
    try:
        launcher.find_ptf()
        return True
    except launcher.LauncherError:
        return False


def write(path, text):
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))


@pytest.fixture
def test_dir(tmp_path):
    # A test directory shaped like sonic-mgmt's: its own sai_base_test.py, which must not be loaded, sorting
    # before the test module (ptf loads files in name order; sai_base_test.py < sai_qos_tests.py).
    write(tmp_path / "sai_base_test.py", 'raise RuntimeError("the test directory\'s sai_base_test.py was loaded")\n')
    write(tmp_path / "sai_qos_probe.py", """
        import sai_base_test

        class ProbeTest(sai_base_test.ThriftInterfaceDataPlane):
            def runTest(self):
                pass
    """)
    stand_in = tmp_path / "standin"
    stand_in.mkdir()
    stand_in_text = """
        import unittest

        class ThriftInterfaceDataPlane(unittest.TestCase):
            pass
    """
    write(stand_in / "shim_base.py", stand_in_text)
    # The same stand-in under the test directory's name, first on PYTHONPATH: ptf still loads the directory's.
    write(stand_in / "sai_base_test.py", stand_in_text)
    return tmp_path


def run(args, test_dir, plain=False):
    """The launcher with `args`; plain=True: ptf itself with the arguments after `--` (nothing preloaded)."""
    # ptf writes ptf.log into the working directory.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SHIM_ROOT, str(test_dir / "standin")]),
               PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, launcher.find_ptf()] + args[args.index("--") + 1:] if plain else \
        [sys.executable, "-m", "lossless_sai.launcher"] + args
    return subprocess.run(cmd, capture_output=True, text=True,
                          env=env, timeout=120, cwd=test_dir)


@pytest.mark.skipif(not have_ptf(), reason="ptf is not installed")
def test_plain_ptf_loads_the_test_directory_copy(test_dir):
    # The premise: without pre-registration ptf loads the directory's file, even with a module of that name
    # earlier on sys.path.
    r = run(["--", "--test-dir", str(test_dir), "--list"], test_dir, plain=True)
    assert r.returncode != 0
    assert "the test directory's sai_base_test.py was loaded" in r.stderr


@pytest.mark.skipif(not have_ptf(), reason="ptf is not installed")
def test_preloaded_module_wins_over_the_test_directory_copy(test_dir):
    r = run(["--preload", "sai_base_test=shim_base", "--", "--test-dir", str(test_dir), "--list"], test_dir)
    assert r.returncode == 0, r.stderr
    assert "ProbeTest" in r.stdout
    assert "was loaded" not in r.stderr


@pytest.mark.parametrize("args, message", [
    (["--preload", "sai_base_test"], "expected NAME=MODULE"),
    (["--bogus"], "unknown argument '--bogus'"),
    (["--preload", "switch=no_such_module_xyz", "--"], "cannot import no_such_module_xyz"),
])
def test_bad_arguments_are_named(args, message, capsys):
    assert launcher.main(args) == 2
    assert message in capsys.readouterr().err
