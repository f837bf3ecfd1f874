"""The rpm database: which packages own a toolkit's files (``rpm --root ROOT -qf``).

The rpm database is a Berkeley DB / sqlite file that only ``rpm`` reads reliably, so this asks ``rpm``
itself, and only where it is installed on this machine; elsewhere it says so in a Note.
"""

from typing import List, Optional, Sequence, Tuple

from cudaenv.probes.package_db import RPM_DB_DIRS, has_rpm_database  # noqa: F401  (the database paths' one home)
from cudaenv.model.snapshot import Note
from cudaenv.core.i18n import M

CHUNK = 200


def parse_qf(text: str) -> Tuple[str, ...]:
    """Names printed by ``rpm -qf --qf '%{NAME}\\n'``; 'file ... is not owned by any package' lines dropped."""
    names = set()
    for line in text.splitlines():
        line = line.strip()
        if not line or " " in line or line.startswith("error:"):
            continue
        names.add(line)
    return tuple(sorted(names))


def _rpm_or_note(host, notes: List[Note], what: str, example: str) -> Optional[str]:
    rpm = host.which("rpm")
    if rpm is None:
        notes.append(
            Note(
                "uninstall",
                M("this looks like an rpm install but rpm is not installed here, so %s cannot be read; "
                "on the machine itself run `%s` to name them", what, example),
            )
        )
    return rpm


def rpm_installed(host, prefixes: Sequence[str], notes: List[Note]) -> Optional[Tuple[str, ...]]:
    """Exact names of the installed packages starting with one of ``prefixes`` (``rpm --root ROOT -qa``), or None."""
    rpm = _rpm_or_note(host, notes, M("the driver packages"), "rpm -qa 'nvidia-driver*' 'kmod-nvidia*'")
    if rpm is None:
        return None
    result = host.run([rpm, "--root", str(host.root), "-qa", "--qf", "%{NAME}\\n"], timeout=max(host.timeout, 30.0))
    if not result.ok:
        notes.append(Note("uninstall", M("rpm -qa: %s", result.describe())))
        return None
    return tuple(n for n in parse_qf(result.stdout) if n.startswith(tuple(prefixes)))


def rpm_owners(host, files: Sequence[str], notes: List[Note]) -> Optional[Tuple[str, ...]]:
    """Exact names of the packages owning ``files`` (inspected-system paths), or None when rpm cannot tell."""
    rpm = _rpm_or_note(host, notes, M("the owning packages"), "rpm -qf %s" % (files[0] if files else "PATH"))
    if rpm is None:
        return None
    names: set = set()
    root = str(host.root)
    for start in range(0, len(files), CHUNK):
        argv = [rpm, "--root", root, "-qf", "--qf", "%{NAME}\\n", *files[start : start + CHUNK]]
        result = host.run(argv, timeout=max(host.timeout, 30.0))
        if result.error is not None:
            notes.append(Note("uninstall", result.describe()))  # a marked message (CommandResult.describe)
            return None
        names.update(parse_qf(result.stdout))
    return tuple(sorted(names))
