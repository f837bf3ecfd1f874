"""An interpreter's site-packages dirs (where pip's ``nvidia-*`` wheels and torch live): the one home of that fact.

* :func:`probe_site_packages`: ask the interpreter itself: the child script ``cudaenv/_child/torch_probe.py`` in its
  ``site-packages`` mode (its ``_site_packages()`` is the one in-interpreter reader; the doctor's ``static`` pass
  reports the same list);
* :func:`site_packages_from`: the one parser of that list in the child's JSON (the doctor's too);
* :func:`env_site_packages`: without running anything, the site-packages of the active venv (``VIRTUAL_ENV``) and
  conda env (``CONDA_PREFIX``): what `cudaenv use` and `list` can afford (they must stay instant);
* :func:`enclosing_site_packages`: the site-packages folder a path lies in (a pip wheel's toolkit), and
  :func:`site_env_prefix`: the venv or conda prefix a site-packages folder belongs to (pure, on paths).
The folder names themselves are :data:`SITE_DIRS` (``tests/project/test_one_home_model.py`` checks no other module
spells them).
On ``cudaenv use``'s hot path (:func:`env_site_packages`): stdlib only, nothing heavy at import time.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off the `cudaenv use` path
    from typing import Any, List, Optional, Tuple

MODE = "site-packages"  # the child's mode that prints only the list
SITE_DIRS = ("site-packages", "dist-packages")  # the folder names of installed packages (dist-packages: Debian's)


def enclosing_site_packages(path: str) -> Optional[str]:
    """The site-packages (or dist-packages) folder ``path`` lies in or is, written with ``/``; None when none.

    ``/e/lib/python3.12/site-packages/nvidia/cuda_runtime`` -> ``/e/lib/python3.12/site-packages`` (the first such
    component: a whole folder name, never part of one such as ``site-packages-old``)."""
    parts = path.replace("\\", "/").split("/")
    for i, part in enumerate(parts):
        if part in SITE_DIRS:
            return "/".join(parts[: i + 1])
    return None


def site_env_prefix(site: str) -> Optional[str]:
    """The venv or conda prefix a site-packages folder belongs to, None for another layout.

    ``PREFIX/lib/pythonX.Y/site-packages`` (Linux, macOS; also ``lib64`` and Debian's ``dist-packages``) and
    ``PREFIX\\Lib\\site-packages`` (Windows venvs and conda envs). The prefix keeps the separators ``site`` has.
    """
    text = site.rstrip("/\\")
    cut = [i for i, ch in enumerate(text) if ch in "/\\"]
    parts = text.replace("\\", "/").split("/")
    if len(parts) < 3 or parts[-1] not in SITE_DIRS:
        return None
    if parts[-2].lower() == "lib":  # Windows: PREFIX\Lib\site-packages
        return text[: cut[-2]] or text[:1]
    if len(parts) >= 4 and parts[-2].startswith("python") and parts[-3] in ("lib", "lib64"):
        return text[: cut[-3]] or text[:1]
    return None


def site_packages_from(data: Any) -> Tuple[str, ...]:
    """The ``site_packages`` list of the child's JSON object as strings; () when it is missing or not a list."""
    values = data.get("site_packages") if isinstance(data, dict) else None
    return tuple(str(v) for v in values) if isinstance(values, (list, tuple)) else ()


def probe_site_packages(host, python: str, timeout: Optional[float] = None) -> Tuple[Tuple[str, ...], Optional[str]]:
    """``python``'s site-packages dirs, as it reports them, and None; or ``((), why)`` when it could not be run."""
    from cudaenv.probes.torch_child import child_command, parse_child_output

    result = host.run([python, "-c", child_command(MODE, python, host), MODE], timeout=timeout)
    if not result.ok:
        return (), result.describe()
    return tuple(dict.fromkeys(site_packages_from(parse_child_output(result.stdout)))), None


def env_site_packages(host) -> Tuple[str, ...]:
    """site-packages of the active venv (VIRTUAL_ENV) and conda env (CONDA_PREFIX), found without running Python."""
    from cudaenv.probes.paths import clean_env_path, is_absolute

    out: List[str] = []
    for name in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = clean_env_path(host.env.get(name))
        if not prefix or not is_absolute(host, prefix):
            continue
        if host.system == "windows":
            candidates = [host.join(prefix, "Lib", SITE_DIRS[0])]
        else:
            lib = host.join(prefix, "lib")
            candidates = [host.join(lib, n, SITE_DIRS[0]) for n in host.listdir(lib) if n.startswith("python")]
        out += [c for c in candidates if host.is_dir(c) and c not in out]
    return tuple(out)
