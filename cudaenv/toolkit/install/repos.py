"""``cudaenv install 12.4 --plan``: the system-wide, toolkit-only commands for this platform (printed, never run).

The commands come from ``data/toolkit_install.json`` (NVIDIA's installation guide and WSL guide); the platform from
the doctor's platform probe (os-release ID and VERSION_ID, WSL). :func:`plan_commands` is pure."""

from __future__ import annotations

from cudaenv.core.version import major_minor, version_key

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, Optional, Sequence, Tuple

TABLE = "toolkit_install"
ARCHES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "sbsa", "arm64": "sbsa"}


def _table(table: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    if table is not None:
        return table
    from cudaenv.core.resources import load_table

    return load_table(TABLE)


def row(when: str, table: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The row for ``when`` (``wsl2``, ``runfile``, ``conda``, ``other``) or for a base distribution's os-release ID."""
    rows = _table(table)["rows"]
    for r in rows:
        if r["when"] == when or (isinstance(r["when"], list) and when in r["when"]):
            return r
    return next(r for r in rows if r["when"] == "other")


def distro_row(distro_id: Optional[str], like: Sequence[str] = (), wsl: Optional[int] = None,
               table: Optional[Dict[str, Any]] = None) -> Tuple[Dict[str, Any], str]:
    """(the row, the base distribution whose repository it names) for this machine: WSL2's row, else the row of the
    closest base distribution of :func:`cudaenv.facts.distro.lineage` (the driver advice's rule), when this
    distribution's VERSION_ID is that base's release; else ``other`` (a derivative's own VERSION_ID would name a
    repository that does not exist: Linux Mint 21.3 is not ubuntu213)."""
    from cudaenv.facts.distro import lineage, pick, same_release

    if wsl == 2:
        return row("wsl2", table), "ubuntu"
    picked = pick(_table(table)["rows"], lineage(distro_id, like))
    if picked is None or not same_release(distro_id, picked[1]):
        return row("other", table), (distro_id or "").strip().lower()
    return picked


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
                  machine: Optional[str], table: Optional[Dict[str, Any]] = None,
                  like: Sequence[str] = ()) -> Tuple[Tuple[str, ...], str]:
    """(the commands, the row's source URL text) for installing CUDA ``version``'s toolkit system-wide here; ``like``:
    os-release's ID_LIKE."""
    tbl = _table(table)
    r, base = distro_row(distro_id, like, wsl, tbl)
    ver_key = version_key(distro_version or "")
    values = {
        "id": base,
        "ver": "".join((distro_version or "").strip().split(".")[: 1 if base == "debian" else 2]) if ver_key else "",
        "major": str(ver_key[0]) if ver_key else "",
        "arch": ARCHES.get((machine or "x86_64").lower(), "x86_64"),
        "pkg": package(version),
        "version": version,
    }
    values["repo"] = (r.get("repo") or "").format(**values)
    from cudaenv.core.i18n import M, filled_message

    # a step with a comment is words (tools/po.py reads them from the table): said in the reader's language
    steps = tuple(filled_message(step, step.format(**values), values) if "#" in step else step.format(**values)
                  for step in r["steps"])
    mm = ".".join(str(x) for x in version_key(version)[:2])
    conda = tuple(filled_message(step, step.format(mm=mm), {"mm": mm}) if "#" in step else step.format(mm=mm)
                  for step in row("conda", tbl)["steps"])
    return steps + (M("# or, without root:"),) + conda, source_text(tbl["sources"][r["source"]])


def source_text(source: str):
    """A table's source as people read it: ``URL (note)``, its note in words (tools/po.py reads the notes of the
    sources the rows name), said in the reader's language; the URL as it is."""
    from cudaenv.core.i18n import M, filled_message

    url, sep, note = source.partition(" (")
    if not sep or not note.endswith(")") or not note[:-1].strip():
        return source
    note = note[:-1]
    return M("%s (%s)", url, filled_message(note, note, {}))
