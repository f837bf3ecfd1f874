"""The packages and the install commands for a chosen build (pure).

Every install from a variant index pins the local tag (``torch==2.7.1+cu126``) where that index's wheels carry
one, for torch and its companions: with an ``extra-index-url`` in the user's pip configuration, a plain
``torch==2.7.1`` may be satisfied by PyPI's build of the same version. A companion that is not rebuilt per
torch release (torchaudio >= 2.11) keeps its plain pin.
"""

from __future__ import annotations

import shlex

from cudaenv.facts import torch as tf
from cudaenv.facts import torch_policy as policy
from cudaenv.core.i18n import M

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Mapping, Optional, Sequence, Tuple

VENV = "~/.venvs/torch"


def local_pins(variant: str, platform: str, table=None) -> bool:
    """Whether wheels of this variant carry the variant as a local tag (``2.7.1+cu126``)."""
    return policy.local_tag(tf.variant_kind(variant), platform, table)


def packages(target: str, variant: str, platform: str, companions: Mapping[str, str], installed: Optional[str] = None,
             tables=None) -> Tuple[List[str], List[str], List[str]]:
    """("torch==2.7.1+cu126", ...) plus the same without local tags, and notes."""
    tables = tables or {}
    notes: List[str] = []
    local = variant if local_pins(variant, platform, tables.get("torch_policy")) else None
    wanted: List[Tuple[str, Optional[str], Optional[str]]] = [("torch", target, installed)]  # (name, version, installed)
    table = tf.companions_for(target, tables.get("torch_companions")) or {}
    for name in ("torchvision", "torchaudio"):
        have = companions.get(name)
        if not have:
            continue
        version = table.get(name)
        if not version:
            notes.append(M("the %s matching torch %s is not in the tables: pin it yourself", name, target))
        wanted.append((name, version, have))
    pkgs, plain = [], []
    for name, version, _have in wanted:
        if version is None:
            pkgs.append(name)
            plain.append(name)
            continue
        reused = policy.not_rebuilt(name, version, target, tables.get("torch_policy"))
        pin_local = local and not reused
        if reused and local:
            built_for = tf.variants_for(version, platform.split("-")[0], platform.split("-")[-1], tables.get("torch_variants"))
            if built_for and variant not in built_for:
                notes.append(M("%s %s was built only for %s: no build of it is known on the %s index; install it from one of those "
                               "indexes or leave it out", name, version, ", ".join(v for v in built_for if v != "default"), variant))
        pkgs.append("%s==%s%s" % (name, version, "+" + local if pin_local else ""))
        plain.append("%s==%s" % (name, version))
    return pkgs, plain, notes


def quote(text: str, system: str) -> str:
    if system == "windows":
        return '"%s"' % text if (" " in text or not text) else text
    return shlex.quote(text)


def index_option(flat: bool = False) -> str:
    """How an install names the torch index: ``--index-url`` (a simple index, the only one for the packages named),
    or ``--find-links`` for a flat listing (one page of wheels: a mirror's); the local-tag pins keep the default
    index's builds of the same version out either way."""
    return "--find-links" if flat else "--index-url"


def commands(pkgs: Sequence[str], index_url: Optional[str], installer: str, python: Optional[str], system: str,
             managed: bool = False, flat: bool = False) -> List[str]:
    """The install command(s); for an externally managed Python (PEP 668) the venv recipe instead."""
    py = quote(python or ("python" if system == "windows" else "python3"), system)
    tail = " ".join(quote(p, system) for p in pkgs)
    idx = " %s %s" % (index_option(flat), index_url) if index_url else ""
    if managed:
        return venv_recipe(py, tail + idx)
    if installer == "uv":
        return ["uv pip install --python %s %s%s" % (py, tail, idx)]
    return ["%s -m pip install %s%s" % (py, tail, idx)]


def venv_recipe(python: str, pip_args: str) -> List[str]:
    """THE recipe beside an externally managed system Python (PEP 668 makes pip refuse to install into it)."""
    return [M("%s -m venv %s    # %s is externally managed (PEP 668): pip will not install into it", python, VENV, python),
            "%s/bin/python -m pip install %s" % (VENV, pip_args)]


def install_argv(pkgs: Sequence[str], index_url: Optional[str], python: str, installer: str = "pip",
                 retries: Optional[int] = None, timeout: Optional[float] = None, flat: bool = False) -> List[str]:
    """The argv that runs the install in ``python`` (for `cudaenv fix`)."""
    tail = list(pkgs) + ([index_option(flat), index_url] if index_url else [])
    if installer == "uv":
        return ["uv", "pip", "install", "--python", python] + tail
    extra = []
    if retries is not None:
        extra += ["--retries", str(retries)]
    if timeout is not None:
        extra += ["--timeout", "%d" % max(1, round(timeout))]
    return [python, "-m", "pip", "install"] + extra + tail
