"""Compiled torch extensions against the installed torch (``Snapshot.extensions``, read by probes/extensions.py):
an extension whose undefined symbols in torch's C++ namespaces the installed torch does not export fails to import
(``undefined symbol: _ZN3c10...``): it was built against another torch, or with the other ``std::string`` ABI
(``_GLIBCXX_USE_CXX11_ABI``). Pure: :func:`check` gives the finding, :func:`broken` the extensions it is about.
"""

from __future__ import annotations

from cudaenv.core.config import TORCH_INDEX
from cudaenv.core.i18n import M, join
from cudaenv.diagnose import _common as c
from cudaenv.parse.symbols import readable

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional

F = c.make("frameworks")


def broken(s) -> List:
    """The extensions with symbols torch does not export."""
    return [e for e in getattr(s, "extensions", ()) if e.missing_count]


def abi_words(flag: Optional[bool]) -> str:
    return "?" if flag is None else "TRUE" if flag else "FALSE"


def _torch_build(s) -> str:
    t = s.torch
    version = t.version if t is not None and t.version else "?"
    cuda = (", CUDA %s" % t.cuda) if t is not None and t.cuda else ""
    return "%s%s" % (version, cuda)


def _built_for(e) -> str:
    bits = []
    if e.torch_pin:
        bits.append(M("torch %s (its requirement pins it)", e.torch_pin))
    if e.cuda:
        bits.append(M("CUDA %s (it needs libcudart.so.%s)", e.cuda, e.cuda))
    bits.append("C++11 ABI %s" % abi_words(e.cxx11_abi))
    return join(", ", bits)


def _fix(s, exts) -> List[str]:
    t = s.torch
    version = (t.version or "").split("+", 1)[0] if t is not None else ""
    tag = (t.version or "").split("+", 1)[1] if t is not None and "+" in (t.version or "") else ""
    target = ("torch %s" % ".".join(version.split(".")[:2]) if version else M("this torch")) + (" + %s" % tag if tag else "") \
        + (M(" with C++11 ABI %s", abi_words(exts[0].torch_cxx11_abi)) if exts[0].torch_cxx11_abi is not None else "")
    out = [M("# install the build of %s made for %s (the project's release page names one per torch, CUDA and C++ ABI), "
             "or build it here against this torch:", ", ".join(dict.fromkeys(e.package for e in exts)), target)]
    for e in exts:
        line = "%s install --no-build-isolation --no-cache-dir --force-reinstall --no-deps %s" % (
            c.pip_cmd(s), c.quote("%s==%s" % (e.package, e.version) if e.version else e.package))
        if line not in out:
            out.append(line)
    pins = [e for e in exts if e.torch_pin and e.torch_pin != version]
    if pins and tag.startswith("cu"):
        out.append(M("# or go back to the torch %s pins (same CUDA build):", pins[0].package))
        out.append("%s install %s --index-url %s/%s" % (c.pip_cmd(s), c.quote("torch==%s" % pins[0].torch_pin), TORCH_INDEX, tag))
    return out


def check(s, tables=None) -> List:
    exts = broken(s)
    if not exts:
        return []
    first = exts[0]
    names = ", ".join(readable(n) for n in first.missing[:3])
    more = first.missing_count - min(3, len(first.missing))
    abi = ""
    if first.cxx11_abi is not None and first.torch_cxx11_abi is not None and first.cxx11_abi != first.torch_cxx11_abi:
        abi = M(" Its C++11 ABI (_GLIBCXX_USE_CXX11_ABI) is %s and torch's is %s: every torch function taking a "
                "std::string has another name on each side.", abi_words(first.cxx11_abi), abi_words(first.torch_cxx11_abi))
    return [F(
        "extension-abi-mismatch", "warning",
        M("%s will fail to import: built against another torch than %s",
          ", ".join(dict.fromkeys("%s %s" % (e.package, e.version or "?") for e in exts)), _torch_build(s)),
        M("%s needs %s%s that this torch's libraries do not export, so importing it stops with \"undefined symbol: %s\". "
          "Built for %s; this torch is %s, C++11 ABI %s.%s%s",
          first.object, names, M(" and %d more", more) if more > 0 else "", first.missing[0], _built_for(first),
          _torch_build(s), abi_words(first.torch_cxx11_abi), abi,
          M(" Also: %s.", join("; ", (M("%s (%d missing)", e.object, e.missing_count) for e in exts[1:]))) if len(exts) > 1 else ""),
        _fix(s, exts),
    )]
