"""ptf-tests/python/sonic-mgmt.sh end to end on a tiny saitests directory of our own (smoke_saitests/: its
sai_base_test.py and switch.py refuse to load, so a pass also shows the shim's modules won): a th_balanced lab
in fresh namespaces, the runner's params, ptf through the launcher, counters over gRPC, clean-up.

Needs root (namespaces), target/debug/switchd and swctl (or CARGO_TARGET_DIR's), and pip access the first time
(the runner's venv); skipped without root or binaries.
"""

import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
RUNNER = os.path.join(REPO, "ptf-tests", "python", "sonic-mgmt.sh")
BIN = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")), "debug")


def _namespaces():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.startswith("lossless-smgmt-")}


def _run(saitests, *tests):
    env = dict(os.environ, PTF_CARGO_PROFILE="debug")
    return subprocess.run([RUNNER, "--no-build", "--saitests", saitests,
                           "--profile", os.path.join(REPO, "configs", "profiles", "th_balanced.yaml"), "--"] + list(tests),
                          capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture(scope="module")
def runnable():
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    for b in ("switchd", "swctl"):
        if not os.access(os.path.join(BIN, b), os.X_OK):
            pytest.skip("no %s/%s (cargo build --bin switchd --bin swctl)" % (BIN, b))


def test_runner_passes_a_saitests_style_test_through_the_shim_and_cleans_up(runnable):
    before = _namespaces()
    r = _run(os.path.join(HERE, "smoke_saitests"), "smoke_tests.SmokeCounters")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "PASS  smoke_tests.SmokeCounters" in r.stdout
    assert _namespaces() == before, "the lab's namespaces are removed"


def test_runner_reports_a_failing_test_and_bad_usage(runnable, tmp_path):
    # The same test with one expectation off by one: ptf fails it, the runner says FAIL and exits 1.
    src = open(os.path.join(HERE, "smoke_saitests", "smoke_tests.py")).read()
    wrong = src.replace("dst_base[TRANSMITTED_PKTS], 110)", "dst_base[TRANSMITTED_PKTS], 111)")
    assert wrong != src
    (tmp_path / "smoke_tests.py").write_text(wrong)
    before = _namespaces()
    r = _run(str(tmp_path), "smoke_tests.SmokeCounters")
    assert r.returncode == 1, r.stdout[-4000:]
    assert "FAIL  smoke_tests.SmokeCounters" in r.stdout and "110 != 111" in r.stdout + r.stderr
    assert _namespaces() == before
    # Usage errors name what was wrong, before any lab exists.
    r = _run(str(tmp_path / "nowhere"), "smoke_tests.SmokeCounters")
    assert r.returncode == 2 and "not a directory" in r.stderr
