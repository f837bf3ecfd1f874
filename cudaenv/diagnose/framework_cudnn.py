"""A framework whose own runtime opens cuDNN at run time (XLA's dlopen of ``libcudnn.so.N`` from JAX's
``xla_cuda_plugin.so``, or a ``+cudaNN.cudnnNN`` jaxlib's ``xla_extension.so``: data/loader_search.json's ``runtime``
rows) and the loader finds no file of the major it was built for (``Framework.cudnn_soname`` without a
``cudnn_path``), whatever other cuDNN is installed. Pure; called from :func:`cudaenv.diagnose.frameworks.check_libraries`."""

from __future__ import annotations

from cudaenv.core.i18n import M, N_
from cudaenv.diagnose import _common as c

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, List

F = c.make("frameworks")

CUDNN_EVIDENCE = {"local-tag": N_("its version tag"), "requires": N_("the nvidia-cudnn wheel the JAX plugin requires"),
                  "row": N_("the cuDNN name its plugin opens")}


def cudnn_missing(s) -> List:
    """The frameworks whose runtime opens a ``libcudnn.so.N`` of the major they were built for (XLA's dlopen) that the
    loader finds nowhere (data/loader_search.json's ``runtime`` rows)."""
    return [fw for fw in s.frameworks if fw.cudnn_soname and not fw.cudnn_path]


def _runtime_row(consumer: str) -> Dict[str, Any]:
    from cudaenv.core.resources import load_table

    return next((r for r in load_table("loader_search")["rows"] if r.get("kind") == "runtime" and r["consumer"] == consumer), {})


def runtime_fix(s, consumer: str) -> List[str]:
    """The line that installs the libraries a ``runtime`` row's object opens (its row's ``fix``: JAX's documented
    ``jax[cudaNN]``, whose plugin's with-cuda extra brings the nvidia wheels); [] for other consumers."""
    row = _runtime_row(consumer)
    return [row["fix"].replace("{pip}", c.pip_cmd(s))] if row.get("fix") else []


def cudnn_fix(s, fw) -> List[str]:
    """The pip line that installs the cuDNN wheel of the major ``fw``'s runtime opens, at least the version it was built
    for (its row's ``cudnn_fix``); with a row's ``upgrade`` (an old build that wants an old major), the line that moves
    to the current build instead."""
    row = _runtime_row(fw.package)
    major = (fw.cudnn_soname or "").rsplit(".so.", 1)[-1]
    floor = fw.cudnn if fw.cudnn and fw.cudnn.split(".", 1)[0] == major else major
    cuda = str(row.get("cuda") or (fw.cuda or "").split(".", 1)[0] or "12")
    values = {"pip": c.pip_cmd(s), "major": cuda, "cudnn": floor, "next": str(int(major) + 1) if major.isdigit() else "?"}

    def filled(template: str) -> str:
        for key, value in values.items():
            template = template.replace("{%s}" % key, value)
        return template

    out = [filled(row["cudnn_fix"])] if row.get("cudnn_fix") else []
    if row.get("upgrade"):
        out.append(M("# or move to the current build, which loads the cuDNN wheel of its own major: %s",
                     "%s install -U %s" % (values["pip"], c.quote(filled(row["upgrade"])))))
    return out


def check(s) -> List:
    """framework-cudnn-not-found: a framework's runtime opens libcudnn.so.N (XLA's dlopen of the cuDNN major it was
    built for) and the loader finds none, whatever other cuDNN is installed."""
    lost = cudnn_missing(s)
    if not lost:
        return []
    fw = lost[0]
    libs = [lib for lib in s.libraries if lib.consumer == fw.package and lib.needed == fw.cudnn_soname]
    caller = libs[0].object.rsplit("/", 1)[-1] if libs else fw.package
    major = (fw.cudnn_soname or "").rsplit(".so.", 1)[-1]
    instead = [M("%s (%s)", path.rsplit("/", 1)[-1], path) for path in fw.cudnn_other] + list(fw.cudnn_wheels)
    from cudaenv.parse.frameworks import local_cudnn

    said = "local-tag" if local_cudnn(fw.version or "") else "requires" if "." in (fw.cudnn or "") else "row"
    return [F(
        "framework-cudnn-not-found", "warning",
        M("%s needs cuDNN %s and the loader finds no %s", ", ".join("%s %s" % (f.package, f.version or "?") for f in lost), major,
          fw.cudnn_soname),
        M("%s is built for cuDNN %s (from %s) and opens it itself at run time: %s loads (dlopen) %s, looked for in the "
          "nvidia-cudnn wheel's folder, its RPATH, LD_LIBRARY_PATH, the loader cache and the default folders, and found "
          "nowhere. JAX then stops at start-up (\"Unable to load cuDNN\", \"Could not load dynamic library '%s'\") or "
          "falls back to the CPU. %s", fw.package, fw.cudnn or major, M(CUDNN_EVIDENCE[said]), caller, fw.cudnn_soname,
          fw.cudnn_soname, M("Installed, of another major: %s.", ", ".join(instead)) if instead else M("No other cuDNN is installed.")),
        cudnn_fix(s, fw),
    )]
