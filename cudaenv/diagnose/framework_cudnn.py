"""A framework whose own runtime opens cuDNN at run time (XLA's dlopen of ``libcudnn.so.N`` from JAX's
``xla_cuda_plugin.so``, a ``+cudaNN.cudnnNN`` jaxlib's ``xla_extension.so``, TensorFlow's TSL from
``libtensorflow_framework.so.2``: data/loader_search.json's ``runtime``
rows) and the loader finds no file of the major it was built for (``Framework.cudnn_soname`` without a
``cudnn_path``), whatever other cuDNN is installed. Pure; called from :func:`cudaenv.diagnose.frameworks.check_libraries`."""

from __future__ import annotations

from cudaenv.core.i18n import M, N_
from cudaenv.diagnose import _common as c

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, List

F = c.make("frameworks")

CUDNN_VIA = {"preload": N_("the nvidia-cudnn wheel its Python code loads first"), "rpath": N_("its RPATH"),
             "LD_LIBRARY_PATH": N_("LD_LIBRARY_PATH"), "runpath": N_("its RUNPATH"), "ld.so.cache": N_("the loader cache"),
             "default": N_("the loader's default folders")}
CUDNN_EVIDENCE = {"local-tag": N_("its version tag"), "requires": N_("the nvidia-cudnn wheel the JAX plugin requires"),
                  "row": N_("the cuDNN name its plugin opens"), "build-info": N_("its build_info.py"),
                  "build-table": N_("its build_info.py's major and the cuDNN its release is compiled with")}
# what the framework does then, and where its loader looked (JAX's plugin loads the wheel's file first; TensorFlow's
# libtensorflow_framework.so.2 searches LD_LIBRARY_PATH before its RUNPATH: data/loader_search.json's runtime rows)
NOT_FOUND = {"": N_("%s is built for cuDNN %s (from %s) and opens it itself at run time: %s loads (dlopen) %s, looked for in the "
                    "nvidia-cudnn wheel's folder, its RPATH, LD_LIBRARY_PATH, the loader cache and the default folders, and found "
                    "nowhere. JAX then stops at start-up (\"Unable to load cuDNN\", \"Could not load dynamic library '%s'\") or "
                    "falls back to the CPU. %s"),
             "tensorflow": N_("%s is built for cuDNN %s (from %s) and opens it itself at run time: %s loads (dlopen) %s, looked "
                              "for in LD_LIBRARY_PATH, its RUNPATH (the nvidia wheels' folders beside it), the loader "
                              "cache and the default folders, and found nowhere. TensorFlow then says \"Could not load dynamic "
                              "library '%s'\" and \"Cannot dlopen some GPU libraries\", registers no GPU and runs on the "
                              "CPU. %s")}


def cudnn_missing(s) -> List:
    """The frameworks whose runtime opens a ``libcudnn.so.N`` of the major they were built for (XLA's dlopen) that the
    loader finds nowhere (data/loader_search.json's ``runtime`` rows)."""
    return [fw for fw in s.frameworks if fw.cudnn_soname and not fw.cudnn_path]


def _runtime_row(consumer: str) -> Dict[str, Any]:
    from cudaenv.core.resources import load_table

    return next((r for r in load_table("loader_search")["rows"] if r.get("kind") == "runtime" and r["consumer"] == consumer), {})


def runtime_fix(s, consumer: str) -> List[str]:
    """The line that installs the libraries a ``runtime`` row's object opens (its row's ``fix``: JAX's documented
    ``jax[cudaNN]``, whose plugin's with-cuda extra brings the nvidia wheels; TensorFlow's and-cuda extra at the installed
    version, without a pin where none was read); [] for other consumers."""
    row = _runtime_row(consumer)
    if not row.get("fix"):
        return []
    fw = next((f for f in s.frameworks if f.package == consumer), None)
    version = fw.version if fw is not None else None
    line = row["fix"].replace("{pip}", c.pip_cmd(s))
    return [line.replace("{version}", version) if version else line.replace("=={version}", "")]


def cudnn_fix(s, fw) -> List[str]:
    """The pip line that installs the cuDNN wheel of the major ``fw``'s runtime opens, at least the version it was built
    for (its row's ``cudnn_fix``); with a row's ``upgrade`` (an old build that wants an old major), the line that moves
    to the current build instead."""
    row = _runtime_row(fw.package)
    major = (fw.cudnn_soname or "").rsplit(".so.", 1)[-1]
    floor = fw.cudnn if fw.cudnn and fw.cudnn.split(".", 1)[0] == major else major
    cuda = str(row.get("cuda") or (fw.cuda or "").split(".", 1)[0] or "12")
    values = {"pip": c.pip_cmd(s), "major": cuda, "cudnn": floor, "next": str(int(major) + 1) if major.isdigit() else "?",
              "version": fw.version or ""}

    def filled(template: str) -> str:
        if not fw.version:
            template = template.replace("=={version}", "")  # no version read: the package's current release
        for key, value in values.items():
            template = template.replace("{%s}" % key, value)
        return template

    out = [filled(row["cudnn_fix"])] if row.get("cudnn_fix") else []
    if row.get("upgrade"):
        out.append(M("# or move to the current build, which loads the cuDNN wheel of its own major: %s",
                     "%s install -U %s" % (values["pip"], c.quote(filled(row["upgrade"])))))
    return out


def check(s) -> List:
    """framework-cudnn-not-found and framework-cudnn-too-old (:func:`check_too_old`)."""
    return _not_found(s) + check_too_old(s)


def _not_found(s) -> List:
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

    said = ("local-tag" if local_cudnn(fw.version or "") else _runtime_row(fw.package).get("cudnn_said")
            or ("requires" if "." in (fw.cudnn or "") else "row"))
    if said == "build-info" and "." in (fw.cudnn or ""):
        said = "build-table"  # data/frameworks.json's build-cudnn row gave the minor
    return [F(
        "framework-cudnn-not-found", "warning",
        M("%s needs cuDNN %s and the loader finds no %s", ", ".join("%s %s" % (f.package, f.version or "?") for f in lost), major,
          fw.cudnn_soname),
        M(NOT_FOUND.get(fw.package, NOT_FOUND[""]), fw.package, fw.cudnn or major, M(CUDNN_EVIDENCE[said]), caller, fw.cudnn_soname,
          fw.cudnn_soname, M("Installed, of another major: %s.", ", ".join(instead)) if instead else M("No other cuDNN is installed.")),
        cudnn_fix(s, fw),
    )]


def cudnn_too_old(s) -> List:
    """The frameworks whose runtime gets a ``libcudnn.so.N`` of the right major but of an older minor than the one they
    were built for (known from the file's name or the nvidia-cudnn wheel holding it): JAX compares major.minor at
    start-up (tests/recorded/wheel-jax-cuda12-pjrt-0.12.0.1-version-check.txt), XLA under TensorFlow when it first uses
    cuDNN (the release's minor from data/frameworks.json's build-cudnn rows: none, no verdict)."""
    from cudaenv.core.version import version_key

    out = []
    for fw in s.frameworks:
        have, want = version_key(fw.cudnn_version or "")[:2], version_key(fw.cudnn or "")[:2]
        if fw.cudnn_path and len(have) == 2 and len(want) == 2 and "." in (fw.cudnn or "") and have < want:
            out.append(fw)
    return out


def check_too_old(s) -> List:
    """framework-cudnn-too-old: the cuDNN it gets is of its major but older than the one it was built for."""
    old = cudnn_too_old(s)
    if not old:
        return []
    fw = old[0]
    want = ".".join(fw.cudnn.split(".")[:2])
    fix = cudnn_fix(s, fw)
    if fw.cudnn_via == "LD_LIBRARY_PATH" and fw.cudnn_path:  # found before the wheel's folder: installing alone changes nothing
        fix.append(M("# and take %s out of LD_LIBRARY_PATH: the loader looks there first", fw.cudnn_path.rsplit("/", 1)[0]))
    return [F(
        "framework-cudnn-too-old", "warning",
        M("%s needs cuDNN %s or newer and gets %s", ", ".join("%s %s" % (f.package, f.version or "?") for f in old), want,
          fw.cudnn_version),
        M(TOO_OLD.get(fw.package, TOO_OLD[""]), fw.package, fw.cudnn_soname, fw.cudnn_path,
          M(CUDNN_VIA.get(fw.cudnn_via or "", N_("the loader's search"))), fw.cudnn_version, want),
        fix,
    )]


# what the framework does with an older minor of its cuDNN major (JAX: tests/recorded/wheel-jax-cuda12-pjrt-0.12.0.1-
# version-check.txt; XLA under TensorFlow: data/frameworks.json's TF-CUDNN-BUILD, tensorflow/tensorflow#60913)
TOO_OLD = {"": N_("%s opens %s at run time and gets %s (from %s), cuDNN %s; it was built for cuDNN %s, and JAX checks at "
                  "start-up that the loaded cuDNN's major.minor is no lower: it stops with \"Outdated cuDNN installation found\". "
                  "A cuDNN pinned by another package (an older torch's nvidia-cudnn-cu12 pin) or a system cuDNN first on the "
                  "search gives this; a newer cuDNN of the same major also serves the older builds."),
           "tensorflow": N_("%s opens %s at run time and gets %s (from %s), cuDNN %s; its release is compiled with cuDNN %s, "
                            "and XLA, which runs its GPU work, checks when it first uses cuDNN that the loaded one has the "
                            "same major and an equal or higher minor: it logs \"Loaded runtime CuDNN library: ... but source "
                            "was compiled with: ...\" and the operation fails with \"DNN library initialization failed\". "
                            "A cuDNN pinned by another package (an older torch's nvidia-cudnn-cu12 pin) or a system cuDNN "
                            "first on the search gives this; a newer cuDNN of the same major also serves the older builds.")}
