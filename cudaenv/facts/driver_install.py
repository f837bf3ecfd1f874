"""How to install or upgrade the NVIDIA driver here: the steps of ``data/driver_install.json``, filled in.

One table for the doctor's fixes and `cudaenv fix`::

    install_steps("linux", "ubuntu", "525.60.13") -> ("sudo apt-get update", ..., "sudo ubuntu-drivers install nvidia:525", ...)

``where`` is ``wsl1``, ``wsl2``, ``windows`` or ``linux`` (then ``distro`` and its os-release ``ID_LIKE``, ``like``,
pick the row by :func:`cudaenv.facts.distro.lineage`, the rule the toolkit tables use too; else ``other``).

The distribution's other driver chores are rows of the same table with a ``topic``, asked by :func:`chore_steps`::

    chore_steps("module_rebuild", "fedora", kernel="6.8.0") -> ("sudo dnf install kernel-devel-6.8.0", "sudo akmods --force || ...")
    chore_steps("initramfs", "ubuntu") -> ("sudo update-initramfs -u",)
    chore_steps("remove_linux_driver", "ubuntu") -> ("dpkg -l | grep ...", "sudo apt-get remove --purge 'nvidia-driver-*' ...")
"""

from typing import Any, Dict, Optional, Sequence, Tuple

TABLE = "driver_install"


def _table(table: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    if table is not None:
        return table
    from cudaenv.core.resources import load_table

    return load_table(TABLE)


def where(system: Optional[str], wsl: Optional[int]) -> str:
    """The row kind for a platform: WSL first (its driver is Windows'), then Windows, else linux."""
    if wsl == 1:
        return "wsl1"
    if wsl == 2:
        return "wsl2"
    if (system or "").lower().startswith("win"):
        return "windows"
    return "linux"


def _row(kind: str, distro: Optional[str], table: Optional[Dict[str, Any]], topic: Optional[str] = None,
         like: Sequence[str] = ()) -> Dict[str, Any]:
    from cudaenv.facts.distro import lineage, pick

    rows = [r for r in _table(table)["rows"] if r.get("topic") == topic]
    if kind != "linux":
        found = next((row for row in rows if row["when"] == kind), None)
    else:
        picked = pick(rows, lineage(distro, like))
        found = picked[0] if picked is not None else None
    return found if found is not None else next(r for r in rows if r["when"] == "other")


def install_steps(kind: str, distro: Optional[str] = None, min_driver: Optional[str] = None,
                  table: Optional[Dict[str, Any]] = None, like: Sequence[str] = ()) -> Tuple[str, ...]:
    """The steps for this platform, with the minimum driver (``"525.60.13"`` or a branch ``"570"``) filled in."""
    branch = (min_driver or "").split(".")[0] if min_driver and min_driver.split(".")[0].isdigit() else ""
    from cudaenv.core.i18n import M, filled_message

    values = {
        "want": M("at least %s", min_driver) if min_driver else M("a newer one"),
        "min": min_driver or M("the version you need"),
        "branch": branch or M("the version you need"),
        "pin": " nvidia:%s" % branch if branch else "",
        "dnf_stream": branch or "latest",
    }
    row = _row(kind, distro, table, like=like)
    return tuple(filled_message(step, step.format(**values), values) for step in row["steps"])  # a renderer may translate


def sources(table: Optional[Dict[str, Any]] = None) -> Dict[str, str]:
    return dict(_table(table)["sources"])


TOPICS = ("module_rebuild", "initramfs", "remove_linux_driver")


def chore_steps(topic: str, distro: Optional[str] = None, table: Optional[Dict[str, Any]] = None, kernel: Optional[str] = None,
                like: Sequence[str] = ()) -> Tuple[str, ...]:
    """The steps of one driver chore on this Linux distribution (``other`` when no row names it); ``kernel``: the
    running kernel release for ``module_rebuild`` (``$(uname -r)`` when unknown, or when it holds anything but
    letters, digits and ``._+-~``: it is read from the machine and pasted into a command)."""
    if topic not in TOPICS:
        raise KeyError(topic)
    row = _row("linux", distro, table, topic, like)
    safe = kernel if kernel and len(kernel) <= 100 and all(ch.isascii() and (ch.isalnum() or ch in "._+-~") for ch in kernel) else None
    from cudaenv.core.i18n import filled_message

    values = {"kernel": safe or "$(uname -r)"}
    return tuple(filled_message(step, step.format(**values), values) for step in row["steps"])  # a renderer may translate
