"""Repointing /usr/local/cuda: what the link is now, the commands that repoint it (never run by cudaenv), and what
else still names another toolkit (``/etc/ld.so.conf.d`` entries, ``CUDA_HOME`` and toolkit paths in the shell
startup files, this shell's own variables). The domain half of ``cudaenv link``; the command only prints.
"""

import os
import posixpath
import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from cudaenv.probes.dpkg import read_alternative
from cudaenv.shells.posix import quote_exact
from cudaenv.core.i18n import M
from cudaenv.core.text import printable
from cudaenv.toolkit.select import LINK
from cudaenv.toolkit.sudo import has_sudo, sudo_prefix
from cudaenv.core.version import version_key

ALTDIR = "/etc/alternatives"
# From the start of a word only (linear: a long run of '/' is scanned once, not once per '/'); the group is the path
_TOOLKIT_PATH = re.compile(r"(?<![^\s:;\"'=$])[^\s:;\"'=$/]*(/[^\s:;\"'=$]*cuda-\d[^\s:;\"'/]*)")


@dataclass(frozen=True)
class LinkState:
    """What /usr/local/cuda is now, as read from the inspected system."""

    kind: str  # missing | link | alternatives | directory | file
    target: Optional[str] = None  # where it resolves now
    alternative_name: Optional[str] = None  # "cuda" for /etc/alternatives/cuda
    registered: Tuple[str, ...] = ()  # the alternatives' paths (from /var/lib/dpkg/alternatives/NAME)
    writable: bool = False  # the user may create the link without sudo
    alternatives_writable: bool = False


@dataclass(frozen=True)
class LinkPlan:
    commands: Tuple[str, ...] = ()
    notes: Tuple[str, ...] = ()
    ok: bool = True


def plan_link(toolkit_path: str, version: Optional[str], state: LinkState, ldconfig: bool = False, ldconfig_sudo: bool = True,
              sudo_available: bool = True, root: Optional[str] = None) -> LinkPlan:
    """The commands that make /usr/local/cuda point at ``toolkit_path`` (pure).

    ``sudo`` leads a command only where it is needed and present (:mod:`cudaenv.toolkit.sudo`). ``root``: the
    inspected image's folder on this machine (``--root``): the link made is the image's own (``ln -sfn
    /usr/local/cuda-12.1 ROOT/usr/local/cuda``, a link that resolves inside the image) and the loader cache the
    image's (``ldconfig -r ROOT``); nothing printed touches this machine's /usr/local/cuda. An image whose link is
    managed by update-alternatives is refused with a note: this machine's update-alternatives would change this
    machine's alternatives, not the image's.
    """
    q = quote_exact
    where = LINK if root is None else M("%s inside %s", LINK, printable(root))
    if state.kind == "directory":
        return LinkPlan(
            (),
            (M("%s is a real folder (a toolkit installed right there), not a link; cudaenv will not replace it. "
               "Move it to a versioned name first (e.g. %s-%s) and run this again.", where, LINK, version or "X.Y"),),
            ok=False,
        )
    if state.target is not None and state.target.rstrip("/") == toolkit_path.rstrip("/"):
        return LinkPlan((), (M("%s already points at %s", where, printable(toolkit_path)),))
    commands: List[str] = []
    notes: List[str] = []
    needed = []
    if state.kind == "alternatives" and state.alternative_name:
        if root is not None:
            return LinkPlan((), (
                M("%s is managed by update-alternatives (%s/%s) in the image; cudaenv prints no command for it under "
                  "--root, since update-alternatives here would change this machine's alternatives. Inside the image "
                  "run: update-alternatives --set %s %s", where, ALTDIR, printable(state.alternative_name),
                  q(state.alternative_name), q(toolkit_path)),), ok=False)
        needed.append(not state.alternatives_writable)
        sudo = sudo_prefix(needed[-1], sudo_available)
        name = q(state.alternative_name)
        if toolkit_path not in state.registered:
            commands.append("%supdate-alternatives --install %s %s %s %d" % (sudo, q(LINK), name, q(toolkit_path), _priority(version)))
        commands.append("%supdate-alternatives --set %s %s" % (sudo, name, q(toolkit_path)))
    else:
        needed.append(not state.writable)
        sudo = sudo_prefix(needed[-1], sudo_available)
        commands.append("%sln -sfn %s %s" % (sudo, q(toolkit_path), q(LINK if root is None else root.rstrip("/") + LINK)))
    if ldconfig:
        needed.append(ldconfig_sudo)
        commands.append("%sldconfig%s" % (sudo_prefix(ldconfig_sudo, sudo_available), "" if root is None else " -r " + q(root)))
    if any(needed) and not sudo_available:
        notes.append(M("sudo is not installed here: run these commands as root"))
    return LinkPlan(tuple(commands), tuple(notes))


def _priority(version: Optional[str]) -> int:
    """The update-alternatives priority of a toolkit, as NVIDIA's packages give it: 12.4 -> 124, 11.8 -> 118 (10 when
    the version is unknown). Read by :func:`cudaenv.core.version.version_key`, the one reader of a version."""
    key = version_key(version)
    return key[0] * 10 + (key[1] if len(key) > 1 else 0) if key else 10


def find_rc_mentions(name: str, text: str, toolkit_path: str) -> List[str]:
    """Lines of an rc file that set CUDA_HOME/CUDA_PATH or name a toolkit folder other than ``toolkit_path``."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        named = [p for p in _TOOLKIT_PATH.findall(stripped) if not _same_toolkit(p, toolkit_path)]
        sets_home = re.search(r"\bCUDA_(HOME|PATH)\s*=", stripped) and not _names_only(stripped, (LINK, toolkit_path))
        if named or sets_home:
            out.append("%s:%d: %s" % (name, number, printable(stripped)))
    return out


def find_ld_mentions(name: str, text: str, toolkit_path: str) -> List[str]:
    from cudaenv.parse.ldconf import ld_conf_lines

    out = []
    for number, line in ld_conf_lines(text):
        entry = line.strip()
        if not _same_toolkit(entry, toolkit_path) and not _same_toolkit(entry, LINK):
            if "cuda" in entry:
                out.append("%s:%d: %s" % (name, number, printable(entry)))
    return out


def _same_toolkit(path: str, root: str) -> bool:
    path, root = path.rstrip("/"), root.rstrip("/")
    return path == root or path.startswith(root + "/")


def _names_only(line: str, allowed: Sequence[str]) -> bool:
    value = line.split("=", 1)[1].strip().strip("\"'")
    value = value.split(":", 1)[0].strip().strip("\"'")
    return any(_same_toolkit(value, a) for a in allowed) or value.startswith("$")


def read_link_state(host) -> LinkState:
    writable = _writable(host, "/usr/local")
    if not host.lexists(LINK):
        return LinkState("missing", writable=writable)
    text = host.readlink(LINK)
    if text is None:
        return LinkState("directory" if host.is_dir(LINK) else "file", writable=writable)
    target = host.resolve(LINK)
    absolute = text if text.startswith("/") else posixpath.normpath(posixpath.join("/usr/local", text))
    if absolute.startswith(ALTDIR + "/"):
        name = absolute[len(ALTDIR) + 1 :].split("/")[0]
        alternative = read_alternative(host, name)
        registered = alternative.paths if alternative is not None else ()
        return LinkState("alternatives", target, name, registered, writable, _writable(host, ALTDIR))
    return LinkState("link", target, writable=writable)


def _writable(host, path: str) -> bool:
    try:
        return os.access(host.path(path), os.W_OK)
    except (OSError, ValueError):
        return False


def _ld_conf(host, toolkit_path: str) -> Tuple[List[str], bool]:
    from cudaenv.parse.ldconf import ld_conf_lines
    from cudaenv.probes.ldconf import read_ld_conf

    notes: List[str] = []
    uses_link = False
    for path, text in read_ld_conf(host):
        if text is None or ("cuda" not in text and "cuda" not in posixpath.basename(path)):
            continue
        notes += find_ld_mentions(path, text, toolkit_path)
        if any(_same_toolkit(line.strip(), LINK) for _n, line in ld_conf_lines(text)):
            uses_link = True
    return notes, uses_link


class LinkReport:
    """What `cudaenv link` prints: the plan's commands (stdout) and what still points elsewhere (stderr)."""

    __slots__ = ("toolkit", "plan", "notes")

    def __init__(self, toolkit, plan: LinkPlan, notes: Sequence[str]):
        self.toolkit, self.plan, self.notes = toolkit, plan, tuple(notes)


def plan_link_for(host, toolkit, env) -> LinkReport:
    """Read the link, ld.so.conf and the startup files on ``host`` and plan repointing /usr/local/cuda at ``toolkit``."""
    from cudaenv.toolkit.uninstall.rcfiles import rc_files

    link_state = read_link_state(host)
    ld_notes, ld_uses_link = _ld_conf(host, toolkit.path)
    plan = plan_link(toolkit.path, toolkit.version, link_state, ldconfig=ld_uses_link, ldconfig_sudo=not _writable(host, "/etc"),
                     sudo_available=has_sudo(host), root=host.local("/") if host.rooted else None)
    notes = list(plan.notes)
    for line in ld_notes:
        notes.append(M("still points elsewhere (the loader's search path): %s", line))
    for path in rc_files(host):
        text = host.read_text(path, limit=1024 * 1024)
        if text:
            for line in find_rc_mentions(path, text, toolkit.path):
                notes.append(M("still points elsewhere (shell startup): %s", line))
    for name in ("CUDA_HOME", "CUDA_PATH"):
        value = env.get(name)
        if value and not _same_toolkit(value, toolkit.path) and not _same_toolkit(value, LINK):
            notes.append(M("this shell has %s=%s; `cudaenv use system` switches it to the link", name, printable(value)))
    return LinkReport(toolkit, plan, notes)
