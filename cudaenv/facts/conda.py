"""conda-forge's torch and the conda/pixi solver's virtual packages (``data/conda_torch.json``), asked as questions.

* ``channel()`` -> the row naming conda-forge's packages (``pytorch``, ``pytorch-gpu``, ``cuda-version``);
* ``builds("2.12.0", "linux-64")`` -> the row of the cuda-version builds conda-forge makes of that release, or None;
* ``virtual_packages()`` -> the rows of ``__cuda``, ``__cuda_arch``, ``__glibc``, ``__linux``, ``__unix``;
* ``subdir("linux", "x86_64")`` -> ``"linux-64"``, conda's name of a platform.
"""

from typing import Any, Dict, List, Optional

from cudaenv.core.version import compare_pep440

TABLE = "conda_torch"
_SUBDIRS = {("linux", "x86_64"): "linux-64", ("linux", "aarch64"): "linux-aarch64", ("windows", "x86_64"): "win-64",
            ("darwin", "arm64"): "osx-arm64", ("darwin", "x86_64"): "osx-64"}


def _rows(rule: str, table: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    if table is None:
        from cudaenv.core.resources import load_table

        table = load_table(TABLE)
    return [r for r in table["rows"] if r.get("rule") == rule]


def subdir(system: str, machine: str) -> Optional[str]:
    """conda's platform name (its subdir) for an OS and CPU; None for one conda-forge has no torch for."""
    mach = {"amd64": "x86_64", "arm64": "aarch64" if system == "linux" else "arm64"}.get(machine.lower(), machine.lower())
    return _SUBDIRS.get((system, mach))


def channel(table: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    return _rows("channel", table)[0]


def builds(torch_version: str, platform: Optional[str], table: Optional[Dict[str, Any]] = None) -> Optional[Dict[str, Any]]:
    """The builds row covering ``torch_version`` on ``platform`` (a conda subdir), else None."""
    for row in _rows("builds", table):
        if platform in row["platforms"] and compare_pep440(row["from"], torch_version) <= 0 <= compare_pep440(row["to"], torch_version):
            return row
    return None


def virtual_packages(table: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    return _rows("virtual_package", table)
