"""``doctor --import``: what each framework said when it was imported in a child of the probed Python
(``Snapshot.framework_imports``): an import that fails (its error text), and a framework that imports but whose own
device check sees no GPU on a machine with one (an ONNX Runtime session that fell back to the CPU provider, a
TensorFlow or JAX without its CUDA build or libraries). Pure."""

from __future__ import annotations

from cudaenv.core.i18n import M, join
from cudaenv.diagnose import _common as c

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List

F = c.make("frameworks")


def failed(s) -> List:
    return [i for i in getattr(s, "framework_imports", ()) if i.imported is not True]


def no_gpu(s) -> List:
    gpu_machine = bool(s.gpus) or c.driver_version(s) is not None
    return [i for i in getattr(s, "framework_imports", ()) if i.imported and i.gpu_count == 0 and gpu_machine]


def verdict(s, item) -> str:
    """The finding id of one import's result, "" when it went well."""
    if item in failed(s):
        return "framework-import-failed"
    if item in no_gpu(s):
        return "framework-no-gpu-seen"
    return ""


def _last_line(text) -> str:
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    if lines == [text] and len(text) <= 300:
        return text  # one line as it is: a marked message (the probe's "no answer (...)") stays one
    return lines[-1][:300] if lines else M("no error text")


def check(s, tables=None) -> List:
    out = []
    python = c.python_cmd(s)
    bad = failed(s)
    if bad:
        out.append(F(
            "framework-import-failed", "warning",
            M("import fails: %s", ", ".join("%s (%s)" % (i.module, i.package) for i in bad)),
            M("Imported in a child of %s: %s.", python, join("; ", (
                M("`import %s` gave no answer (%s)", i.module, _last_line(i.error)) if i.imported is None else
                M("`import %s` raised %s", i.module, _last_line(i.error)) for i in bad))),
            [M("%s -c %s    # the whole traceback", python, c.quote("import %s" % i.module)) for i in bad]
            + [M("# paste it into `cudaenv explain` for its cause and fix")],
        ))
    dark = no_gpu(s)
    if dark:
        out.append(F(
            "framework-no-gpu-seen", "warning",
            M("imported but sees no GPU: %s", ", ".join(i.package for i in dark)),
            M("This machine has an NVIDIA GPU, but %s.", join("; ", (
                M("%s's own check (%s) found none%s", i.module, i.check, " (%s)" % i.detail if i.detail else "") for i in dark))),
            [M("# the other Frameworks findings say why (a CPU build, a CUDA the driver cannot run, a library not found); "
               "with none of them, run the check by hand with CUDA_VISIBLE_DEVICES unset")],
        ))
    return out
