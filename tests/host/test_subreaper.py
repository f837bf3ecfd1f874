"""The subreaper (``PR_SET_CHILD_SUBREAPER``, cudaenv.host.children) set without the ctypes package, and set through it
where ctypes' C module lacks what the short way uses (issue 35: the package cost about 1.5 ms of `doctor --quick`).
Each case runs in a fresh interpreter: a subreaper stays one for the life of its process."""

import subprocess
import sys
from pathlib import Path

import pytest

import cudaenv
from builders import CHILD_CWD

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux's")

CHECK = """
import sys
%s
from cudaenv.host import children
ok = children._become_subreaper()
package = "ctypes" in sys.modules
import ctypes
flag = ctypes.c_int(-1)
got = ctypes.CDLL(None, use_errno=True).prctl(37, ctypes.byref(flag), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
print(ok, package, got, flag.value)
"""


def _run(prelude: str = "") -> str:
    env = {"PYTHONPATH": str(Path(cudaenv.__file__).resolve().parent.parent)}
    run = subprocess.run([sys.executable, "-S", "-c", CHECK % prelude], capture_output=True, text=True, env=env, timeout=60,
                         cwd=CHILD_CWD)
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


def test_the_subreaper_is_set_without_importing_the_ctypes_package():
    assert _run() == ["True", "False", "0", "1"]


def test_where_ctypes_c_module_lacks_a_piece_the_ctypes_package_sets_it():
    # (the package loaded first: it needs the piece taken away, which the short way then lacks)
    assert _run("import ctypes, _ctypes\ndel _ctypes.FUNCFLAG_USE_ERRNO") == ["True", "True", "0", "1"]
