"""``lib64/stubs/libcuda.so`` for a toolkit assembled from wheels: no NVIDIA wheel ships the driver stub a runfile
install has, so driver-API code (``-lcuda``) would not link on a machine without a driver (a container build).

Built with this machine's C compiler (nvcc needs one anyway) from the toolkit's own ``cuda.h``: preprocessed (with
and without ``CUDA_API_PER_THREAD_DEFAULT_STREAM``, whose ``_ptds``/``_ptsz`` names code built with
``--default-stream per-thread`` calls), every declared entry point becomes a function returning
``CUDA_ERROR_STUB_LIBRARY``; the soname is ``libcuda.so.1``, as the real stub's, so what links against it loads the
driver's library at run time. The compiler runs through Host, with a timeout; it is the machine's own ``cc``,
never a program of the toolkit being assembled.
"""

import os
from typing import Optional, Sequence, Tuple

from cudaenv.core.i18n import M
from cudaenv.parse.cuda_header import driver_entry_points, stub_error_code

COMPILERS = ("cc", "gcc", "clang")
SONAME = "libcuda.so.1"


def stub_source(names: Sequence[str], code: int) -> str:
    """C source of the stub: each entry point returns ``code`` (``CUDA_ERROR_STUB_LIBRARY``)."""
    lines = ["/* libcuda.so stub written by cudaenv install: links -lcuda where no driver is; never loaded at run time */"]
    lines += ["int %s(void) { return %d; }" % (n, code) for n in names]
    return "\n".join(lines) + "\n"


def build_stub(host, tree: str, work: str, timeout: float = 120.0) -> Tuple[Optional[str], Optional[str]]:
    """Write ``tree/lib/stubs/libcuda.so``; returns (its path relative to ``tree``, None) or (None, why not)."""
    header = os.path.join(tree, "include", "cuda.h")
    if not os.path.isfile(header):
        return None, M("no lib64/stubs/libcuda.so: the toolkit has no include/cuda.h to build it from")
    cc = next((p for p in (host.which(c) for c in COMPILERS) if p), None)
    if cc is None:
        return None, M("no lib64/stubs/libcuda.so: no C compiler (cc, gcc, clang) on PATH, so -lcuda links only where a "
                       "driver is; install gcc and run the install again with --reinstall")
    names, code = set(), None
    for define in ((), ("-DCUDA_API_PER_THREAD_DEFAULT_STREAM=1",)):
        result = host.run([cc, "-E", "-P", *define, "-I", os.path.join(tree, "include"), header], timeout=timeout)
        if not result.ok or result.truncated:
            return None, M("no lib64/stubs/libcuda.so: %s could not preprocess cuda.h (%s)", os.path.basename(cc), result.describe())
        names.update(driver_entry_points(result.stdout))
        code = code if code is not None else stub_error_code(result.stdout)
    if len(names) < 50 or code is None:
        return None, M("no lib64/stubs/libcuda.so: cuda.h declared %d driver entry points (a stub needs the API)", len(names))
    source = os.path.join(work, "libcuda_stub.c")
    with open(source, "w", encoding="ascii") as fh:
        fh.write(stub_source(sorted(names), code))
    out_dir = os.path.join(tree, "lib", "stubs")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, "libcuda.so")
    result = host.run([cc, "-shared", "-fPIC", "-O0", "-Wl,-soname," + SONAME, "-o", out, source], timeout=timeout)
    if not result.ok or not os.path.isfile(out):
        if os.path.lexists(out):
            os.unlink(out)
        return None, M("no lib64/stubs/libcuda.so: %s could not build it (%s)", os.path.basename(cc), result.describe())
    return "lib64/stubs/libcuda.so", None
