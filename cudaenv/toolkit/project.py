"""What `cudaenv use` needs besides the switch itself: the toolkits as this machine names them, a path spec made
absolute, the project's ``.cuda-version`` file, and the values of the standalone ``--write`` script (worded by
render.switch). Cheap imports only: this
is on the ``cudaenv use`` path.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off the `cudaenv use` path
    from typing import List, Optional, Tuple

    from cudaenv.model.toolkits import Toolkit


def load_toolkits(host, spec: Optional[str] = None) -> Tuple[list, Optional[str], Optional[Toolkit]]:
    """The toolkits found on ``host`` with paths as this machine names them, the /usr/local/cuda link's path, and the
    toolkit ``spec`` names when this already picked it (else None: the caller picks, with ``select_toolkit``).

    With a version ``spec``: only the toolkits that can be its answer or own an entry the switch takes out of PATH
    or LD_LIBRARY_PATH (:func:`cudaenv.probes.toolkits.named.probe_toolkits_named`), when their folder names tell
    and one of them is the answer (that pick is the one returned: `use` does not pick twice); else every toolkit,
    and no pick. Under ``--root`` the paths are mapped into the root, so the shell code works in a shell on this
    machine.
    """
    from cudaenv.model.record import replace

    from cudaenv.probes.site_packages import env_site_packages
    from cudaenv.probes.toolkits import probe_toolkits

    state = chosen = None
    if spec is not None:
        from cudaenv.probes.toolkits.named import probe_toolkits_named
        from cudaenv.toolkit.select import SelectError, select_toolkit
        from cudaenv.toolkit.switch import ACTIVE, AUTO_PREV, LIB_VAR

        env = host.env
        paths = (env.get("PATH") or "").split(":") + (env.get(LIB_VAR) or "").split(":")
        paths += [env.get(ACTIVE) or "", env.get(AUTO_PREV) or ""]
        if host.rooted:  # the shell's entries name the image's folders inside the root
            paths = [host.unroot(p) for p in paths if p]
        state = probe_toolkits_named(host, spec, paths, site_packages=env_site_packages(host))
        try:
            if state is not None:
                chosen = select_toolkit(state.toolkits, spec, host.system)
        except SelectError:
            state = None  # no answer, or two: the message lists every toolkit
    if state is None:
        state = probe_toolkits(host, [], site_packages=env_site_packages(host), install_methods=False)
    toolkits = list(state.toolkits)
    link = None if host.system == "windows" else "/usr/local/cuda"
    if host.rooted:
        # The shell code runs on this machine: name the toolkits where they are here, inside the root.
        at = next(i for i, t in enumerate(toolkits) if t is chosen) if chosen is not None else None
        toolkits = [replace(t, path=host.local(t.path), nvcc=host.local(t.nvcc) if t.nvcc else None) for t in toolkits]
        link = host.local(link) if link else None
        chosen = toolkits[at] if at is not None else None
    return toolkits, link, chosen


def spec_path(spec: str, base: str, host, env) -> str:
    """A path spec made absolute (``~``, relative to ``base``) and mapped into ``--root``; versions unchanged."""
    from cudaenv.toolkit.select import looks_like_path

    if not looks_like_path(spec) or host.system == "windows":
        return spec
    if spec.startswith("~"):
        home = env.get("HOME")
        if home and (spec == "~" or spec.startswith("~/")):
            spec = home + spec[1:]
    if not spec.startswith("/"):
        spec = os.path.join(base, spec)
    spec = os.path.normpath(spec)
    if host.rooted and not spec.startswith(host.local("/").rstrip("/") + "/"):
        spec = host.local(spec)
    return spec


def start_dir(env, cwd: str) -> str:
    """Where to look for ``.cuda-version``: the shell's own spelling of the current directory ($PWD keeps symbolic
    links) when it is the same dir as ``cwd``."""
    pwd = env.get("PWD")
    if pwd and pwd != cwd:
        try:
            if os.path.samefile(pwd, cwd):
                return pwd
        except OSError:
            pass
    return cwd


def find_version_file(start: str) -> Optional[str]:
    """The nearest ``.cuda-version`` in ``start`` or a parent directory, or None."""
    from cudaenv.toolkit.switch import VERSION_FILE

    current = os.path.abspath(start)
    while True:
        candidate = os.path.join(current, VERSION_FILE)
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def read_version_file(path: str) -> Optional[str]:
    """The spec a ``.cuda-version`` names (its first line that is not blank or a comment), read as a regular file
    (bounded; a FIFO or device is not read: cudaenv.host.read_regular)."""
    from cudaenv.host.files import read_regular
    from cudaenv.toolkit.switch import parse_version_file

    data = read_regular(path, 4096)  # a FIFO named .cuda-version must not hang the shell hook
    return None if data is None else parse_version_file(data.decode("utf-8", errors="replace"))


def version_file_spec(start: str, host, env) -> Tuple[Optional[str], Optional[str]]:
    """The nearest ``.cuda-version`` from ``start`` up, and the spec it names (a path spec made absolute against the
    file's folder, :func:`spec_path`): ``(None, None)`` when there is none, ``(file, None)`` when it names no version."""
    found = find_version_file(start)
    if found is None:
        return None, None
    spec = read_version_file(found)
    return found, (None if spec is None else spec_path(spec, os.path.dirname(found), host, env))


def write_version_file(directory: str, spec: str) -> str:
    """``--local``: ``.cuda-version`` in ``directory`` written atomically (an editor or a hook reading it meanwhile
    sees the old file or the new one); the path written."""
    from cudaenv.core.fs import atomic_write_text
    from cudaenv.toolkit.switch import VERSION_FILE

    path = os.path.join(directory, VERSION_FILE)
    atomic_write_text(path, spec.strip() + "\n")
    return path


class SwitchScript:
    """What the ``--write`` script fixes: the toolkit (its version, folder and library folder), the link, and every
    toolkit folder it may take off PATH (``known``). render.switch.render_switch_script words it."""

    __slots__ = ("version", "root", "lib", "link", "known")

    def __init__(self, version, root, lib, link, known):
        self.version, self.root, self.lib, self.link, self.known = version, root, lib, link, known


def switch_script(toolkit, toolkits, link: Optional[str], env) -> SwitchScript:
    """The values of the standalone ``--write`` script for ``toolkit``: the toolkit folders it knows are the
    dedicated ones (cudaenv.toolkit.switch.is_dedicated) and the link."""
    from cudaenv.toolkit.switch import _Paths, _lib_entry, is_dedicated

    roots: List[str] = []
    for t in list(toolkits) + [toolkit]:
        if is_dedicated(t, env) and t.path not in roots:
            roots.append(t.path)
    if link and link not in roots:
        roots.append(link)
    return SwitchScript(toolkit.version or "unknown", toolkit.path, _lib_entry(toolkit, _Paths("linux")) or "",
                        link or "/usr/local/cuda", tuple(roots))


def write_switch_script(path: str, text: str) -> None:
    """``--write FILE``: the script (render.switch.render_switch_script) written to ``path`` atomically, executable
    as a new script is (``0777 & ~umask``, and always by its owner; ``OSError`` when it cannot be written)."""
    from cudaenv.core.fs import atomic_write_text, usual_mode

    atomic_write_text(path, text, mode=usual_mode(executable=True) | 0o700, errors="surrogateescape")
