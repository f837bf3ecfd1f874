"""``cudaenv install 12.4 --plan``: the system-wide, toolkit-only commands for this platform (printed, never run).

The commands come from ``data/toolkit_install.json`` (NVIDIA's installation guide and WSL guide); the platform from
the doctor's platform probe (os-release ID and VERSION_ID, WSL). :func:`plan_commands` is pure."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from cudaenv.version import major_minor, version_key

TABLE = "toolkit_install"
ARCHES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "sbsa", "arm64": "sbsa"}


def _table(table: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    if table is not None:
        return table
    from cudaenv.resources import load_table

    return load_table(TABLE)


def row(when: str, table: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The row for ``when`` (``wsl2``, ``runfile``, ``conda``, ``other``) or for an os-release ID."""
    rows = _table(table)["rows"]
    for r in rows:
        if r["when"] == when or (isinstance(r["when"], list) and when in r["when"]):
            return r
    return next(r for r in rows if r["when"] == "other")


def package_suffix(version: str) -> Optional[str]:
    """The version part of NVIDIA's package names: ``12.4.1`` -> ``-12-4`` (``cuda-nvcc-12-4``), ``12`` -> ``-12-0``;
    None without a number."""
    mm = major_minor(version)
    return "-" + mm.replace(".", "-") if mm else None


def package(version: str) -> str:
    """NVIDIA's toolkit-only package: ``12.4.1`` -> ``cuda-toolkit-12-4``."""
    suffix = package_suffix(version)
    if suffix is None:
        raise ValueError("not a CUDA version: %r" % (version,))
    return "cuda-toolkit" + suffix


def plan_commands(version: str, distro_id: Optional[str], distro_version: Optional[str], wsl: Optional[int],
                  machine: Optional[str], table: Optional[Dict[str, Any]] = None) -> Tuple[Tuple[str, ...], str]:
    """(the commands, the row's source URL text) for installing CUDA ``version``'s toolkit system-wide here."""
    tbl = _table(table)
    distro = (distro_id or "").strip().lower()
    r = row("wsl2" if wsl == 2 else distro or "other", tbl)
    ver_key = version_key(distro_version or "")
    values = {
        "id": distro if distro not in ("pop", "linuxmint") else "ubuntu",
        "ver": "".join((distro_version or "").strip().split(".")[: 1 if distro == "debian" else 2]) if ver_key else "",
        "major": str(ver_key[0]) if ver_key else "",
        "arch": ARCHES.get((machine or "x86_64").lower(), "x86_64"),
        "pkg": package(version),
        "version": version,
    }
    values["repo"] = (r.get("repo") or "").format(**values)
    steps = tuple(step.format(**values) for step in r["steps"])
    mm = ".".join(str(x) for x in version_key(version)[:2])
    conda = tuple(step.format(mm=mm) for step in row("conda", tbl)["steps"])
    return steps + ("# or, without root:",) + conda, tbl["sources"][r["source"]]
