"""Runs p4lang's `ptf` with modules pre-registered in sys.modules, so that the test directory's own copies
(sonic-mgmt's sai_base_test.py and switch.py) are not the ones used, and the user's files stay untouched.

ptf's loader (load_test_modules in the `ptf` script) walks --test-dir and, for each file, uses
sys.modules[name] when the name is already there; otherwise it loads the file from that directory by path, so
sys.path order cannot override it (docs/sonic-mgmt-shim.md section 1).

    python -m lossless_sai.launcher [--preload NAME=MODULE]... -- PTF_ARGS...

Without --preload it registers the shim's modules (SHIM_MODULES) once they exist.
"""

import importlib
import os
import runpy
import shutil
import sys

# Test-directory module name -> the shim module that stands in for it (filled in as the shim grows).
# Order matters: sai_base_test imports `switch`, which must already be the shim's.
SHIM_MODULES = {
    "switch_sai_thrift": "lossless_sai.switch_sai_thrift",
    "switch": "lossless_sai.switch",
    "sai_base_test": "lossless_sai.sai_base_test",
}


class LauncherError(Exception):
    pass


def preload(mapping):
    """Imports each stand-in and registers it under the name the tests import, with its already imported
    submodules under that name too (`from switch_sai_thrift.ttypes import ...` must find the same module
    object, not import a second copy whose classes differ)."""
    for name, module_name in mapping.items():
        try:
            sys.modules[name] = importlib.import_module(module_name)
        except ImportError as e:
            raise LauncherError("--preload %s=%s: cannot import %s: %s" % (name, module_name, module_name, e))
        prefix = module_name + "."
        for sub in [m for m in sys.modules if m.startswith(prefix)]:
            sys.modules[name + "." + sub[len(prefix):]] = sys.modules[sub]


def find_ptf():
    # The ptf next to this interpreter first (a venv's bin/), then PATH.
    here = os.path.join(os.path.dirname(sys.executable), "ptf")
    path = here if os.access(here, os.X_OK) else shutil.which("ptf")
    if not path:
        raise LauncherError("the ptf script is not installed (pip install ptf) next to %s or on PATH" % sys.executable)
    return path


def parse_args(argv):
    mapping = dict(SHIM_MODULES)
    ptf_args = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            ptf_args = argv[i + 1:]
            break
        if arg == "--preload" and i + 1 < len(argv):
            name, sep, module_name = argv[i + 1].partition("=")
            if not sep or not name or not module_name:
                raise LauncherError("--preload %r: expected NAME=MODULE" % argv[i + 1])
            mapping[name] = module_name
            i += 2
            continue
        raise LauncherError("unknown argument %r (usage: [--preload NAME=MODULE]... -- PTF_ARGS...)" % arg)
    return mapping, ptf_args


def main(argv=None):
    try:
        mapping, ptf_args = parse_args(sys.argv[1:] if argv is None else argv)
        preload(mapping)
        ptf = find_ptf()
    except LauncherError as e:
        print("lossless_sai.launcher: %s" % e, file=sys.stderr)
        return 2
    sys.argv = [ptf] + ptf_args
    runpy.run_path(ptf, run_name="__main__")  # ptf ends with sys.exit(status)
    return 0


if __name__ == "__main__":
    sys.exit(main())
