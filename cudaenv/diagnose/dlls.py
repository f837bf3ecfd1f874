"""Frameworks, the Windows DLL rules: the CUDA DLLs torch's and the frameworks' DLLs load on Windows
(``Snapshot.libraries`` from :mod:`cudaenv.probes.dlls`, each consumer's search from data/dll_search.json): a DLL
torch's own search finds nowhere and only its PATH fallback loads (dll-only-on-path), one DLL name resolved to
different files by torch and a framework (dll-two-copies), and each framework's own words and fix for a DLL found
nowhere (library-not-found is :mod:`cudaenv.diagnose.frameworks`'s). Pure."""

from __future__ import annotations

from cudaenv.core.i18n import M, join
from cudaenv.diagnose import _common as c

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Callable, Dict, List

F = c.make("frameworks")


def check(s, reinstall: Callable[[str], List]) -> List:
    """The Windows DLL findings; ``reinstall(consumer)``: the lines that reinstall that consumer's same build."""
    return _only_on_path(s, reinstall) + _two_dll_copies(s) + _import_order(s)


def path_only(s) -> List:
    """The CUDA DLLs that only PATH supplies to a consumer whose own search never looks at PATH (torch on Windows:
    data/dll_search.json's ``path_fallback``): found by its fallback alone, from a folder outside the environment."""
    if s.platform is None or s.platform.system != "windows" or not s.libraries:
        return []
    from cudaenv.core.resources import load_table

    fallback = {r["package"] for r in load_table("dll_search")["rows"] if r.get("kind") == "consumer" and r.get("path_fallback")}
    return [lib for lib in s.libraries if lib.via == "PATH" and lib.path and not lib.from_wheel and lib.consumer in fallback]


def dll_copies(s) -> Dict[str, Dict[str, List[str]]]:
    """Windows: a CUDA DLL name whose file differs between consumers in the process model of probes/dlls.py
    ({lower-case name: {file: [consumers]}}: the file loaded first, with the consumer that loaded it, then the file
    each later consumer's own search takes, with that consumer). One module of a name is loaded per process
    (MS-ORDER's loaded-module list): a later consumer gets the first one (``via="loaded"``), not its own."""
    if s.platform is None or s.platform.system != "windows":
        return {}
    by: Dict[str, Dict[str, List[str]]] = {}
    for lib in s.libraries:
        if lib.via == "loaded" and lib.path and lib.own and lib.own.lower() != lib.path.lower():
            files = by.setdefault(lib.needed.lower(), {})
            for path, user in ((lib.path, lib.first_loaded_by or "?"), (lib.own, lib.consumer)):
                users = files.setdefault(path, [])
                if user not in users:
                    users.append(user)
    return by


def import_order_only(s) -> List:
    """Windows: the CUDA DLLs a consumer's own search finds nowhere that it gets only because another consumer,
    imported before it in the process model, has loaded one of that name (``via="loaded"``, no ``own``). None where
    the user stated the program's import order (``doctor --import-order``): that program then imports them so, and a
    framework it imports first is resolved on its own (library-not-found where that finds none)."""
    if s.platform is None or s.platform.system != "windows" or s.import_order:
        return []
    return [lib for lib in s.libraries if lib.via == "loaded" and lib.path and not lib.own]


def windows_where(consumer: str):
    """Where a consumer's DLL search looked on Windows and how the failure shows (data/dll_search.json's orders)."""
    if consumer == "onnxruntime-gpu":
        return M("not in the provider DLL's folder, System32, the Windows folders nor PATH (ONNX Runtime loads "
                 "onnxruntime_providers_cuda.dll with LOAD_WITH_ALTERED_SEARCH_PATH), so a session on the CUDA provider "
                 "fails with \"LoadLibrary failed with error 126\" and ONNX Runtime runs on the CPU")
    if consumer.startswith("cupy-"):
        return M("not in the module's folder, python.exe's folder, the CUDA folder CuPy adds with os.add_dll_directory "
                 "(CUDA_PATH's bin, else the folder of the nvcc.exe on PATH) nor System32, so importing cupy fails with "
                 "\"ImportError: DLL load failed while importing ...: The specified module could not be found.\"")
    if consumer == "paddlepaddle-gpu":
        return M("not in the folder FLAGS_cudnn_dir (cuDNN) or FLAGS_cuda_dir (cuBLAS, cuRAND, cuSOLVER, cuSPARSE, cuFFT) names, python.exe's folder, System32, "
                 "the Windows folders, PATH (with paddle's own folders first) nor the toolkit folder it was built with "
                 "(PaddlePaddle loads it at its first use), so its first GPU operation fails with \"The third-party dynamic "
                 "library (...) that Paddle depends on is not configured correctly.\"")
    if consumer == "tensorflow":
        return M("not in python.exe's folder, System32, the Windows folders nor PATH (TensorFlow's loader opens it by name, "
                 "in the standard search order, when it first needs the GPU), so TensorFlow says \"Could not load dynamic "
                 "library '...'\" and \"Cannot dlopen some GPU libraries\", registers no GPU and runs on the CPU")
    return M("not in the importing DLL's folder, python.exe's folder, the folders torch adds with os.add_dll_directory, "
             "System32 nor PATH (torch's fallback), so importing torch fails with \"OSError: [WinError 126] The "
             "specified module could not be found. Error loading ... or one of its dependencies.\"")


def windows_fix(s, lib) -> List[str]:
    """A framework's missing CUDA DLL on Windows: its own search's way to the DLL (data/dll_search.json), not a
    reinstall (neither ONNX Runtime's nor CuPy's wheel ships the CUDA DLLs). CuPy: CUDA_PATH on this machine's toolkit
    of CuPy's CUDA major, where there is one; ONNX Runtime: the toolkit's and cuDNN's bin on PATH, or preload_dlls."""
    if lib.consumer.startswith("cupy-"):
        fw = next((f for f in s.frameworks if f.package == lib.consumer), None)
        major = (fw.cuda or "").split(".")[0] if fw is not None else ""
        tk = next((t for t in s.toolkits if major and (t.version or "").split(".")[0] == major), None)
        if tk is not None:
            return ["$env:CUDA_PATH = '%s'" % tk.path.replace("'", "''"),
                    M("# and set CUDA_PATH to that folder for good (System Properties, Environment Variables)")]
        return [M("# install the CUDA %s toolkit (%s is built for it) and set CUDA_PATH to its folder", major or "?", lib.consumer)]
    if lib.consumer == "paddlepaddle-gpu":
        fw = next((f for f in s.frameworks if f.package == lib.consumer), None)
        return _paddle_flags(s, lib.consumer) + [M("# install the CUDA %s toolkit and cuDNN %s (the ones %s is built for) and put their bin folders on PATH",
                  (fw.cuda if fw is not None else None) or "?", (fw.cudnn if fw is not None else None) or "?", lib.consumer),
                M("# or set FLAGS_cudnn_dir (cuDNN) or FLAGS_cuda_dir (cuBLAS, cuRAND, cuSOLVER, cuSPARSE, cuFFT) to the folder that holds %s", lib.needed)]
    if lib.consumer == "tensorflow":  # TensorFlow's documented setup for its last GPU builds (data/dll_search.json)
        from cudaenv.core.resources import load_table

        row = next((r for r in load_table("dll_search")["rows"] if r.get("kind") == "consumer" and r["package"] == "tensorflow"), {})
        return list(row.get("fix") or ()) + [M("# or install the CUDA toolkit and the cuDNN that provide %s and put their "
                                               "bin folders on PATH", lib.needed)]
    return [M("# install the CUDA toolkit and the cuDNN that provide %s and put their bin folders on PATH, or call "
              "onnxruntime.preload_dlls() before the first session (ONNX Runtime 1.21 and later: it loads torch's or the "
              "nvidia wheels' copies)", lib.needed)]


def _paddle_flags(s, consumer: str) -> List[str]:
    """PADDLE-FLAGS, where a toolkit folder its search does not reach holds the DLLs PaddlePaddle finds nowhere
    (LoadedLibrary.others): the PowerShell line that points FLAGS_cudnn_dir (cuDNN) and FLAGS_cuda_dir (the rest) at
    it, which import paddle reads; [] when no such folder is known (or two folders would be one flag's)."""
    flags: Dict[str, str] = {}
    for lib in s.libraries:
        if lib.consumer != consumer or lib.path is not None or not lib.others:
            continue
        flag = "FLAGS_cudnn_dir" if lib.needed.lower().startswith("cudnn") else "FLAGS_cuda_dir"
        folder = lib.others[0].rsplit("\\", 1)[0]
        if flags.setdefault(flag, folder).lower() != folder.lower():
            return []
    missing = [lib for lib in s.libraries if lib.consumer == consumer and lib.path is None]
    if not flags or any(not lib.others for lib in missing):
        return []
    return ["; ".join("$env:%s = '%s'" % (flag, folder.replace("'", "''")) for flag, folder in sorted(flags.items(), key=lambda kv: kv[0] != "FLAGS_cudnn_dir"))]


def _only_on_path(s, reinstall: Callable[[str], List]) -> List:
    """dll-only-on-path: torch's own search finds a CUDA DLL nowhere in the environment; only its fallback through
    PATH loads it, from a toolkit folder."""
    lost = path_only(s)
    if not lost:
        return []
    t = s.torch
    cuda = t.cuda if t is not None and t.cuda else None
    folders = list(dict.fromkeys(lib.path.rsplit("\\", 1)[0] for lib in lost))
    consumer = lost[0].consumer
    return [F(
        "dll-only-on-path", "warning",
        M("CUDA DLLs only PATH supplies: %s", ", ".join("%s (%s)" % (lib.needed, lib.consumer) for lib in lost)),
        M("%s: torch's own search (its lib folder, python.exe's folder, the folders it adds with os.add_dll_directory, "
          "System32) finds none, so only its fallback through PATH loads %s. Importing torch then works only where PATH "
          "holds that folder (a service, a scheduled task or another shell without it fails with \"OSError: [WinError 126] "
          "The specified module could not be found\"), and the DLL is whatever release is installed there, not the one "
          "torch was built with (a missing entry point fails with \"[WinError 127] The specified procedure could not be "
          "found\").", join("; ", (M("%s needs %s", lib.object, lib.needed) for lib in lost)),
          join("; ", (M("%s from %s", lib.needed, lib.path) for lib in lost))),
        reinstall(consumer)
        + [M("# or install the CUDA %s toolkit torch was built with and keep its bin folder on PATH wherever torch is imported (now: %s)",
             cuda, ", ".join(folders)) if cuda else
           M("# or keep %s on PATH wherever torch is imported", ", ".join(folders))],
    )]


def _two_dll_copies(s) -> List:
    """dll-two-copies: torch and a framework resolve one CUDA DLL name to different files (a framework whose search
    reaches PATH, such as ONNX Runtime's, takes a toolkit's or a cuDNN installer's copy while torch ships its own)."""
    copies = dll_copies(s)
    if not copies:
        return []
    users = list(dict.fromkeys(u for files in copies.values() for us in files.values() for u in us))
    parts = [M("%s resolves %s to %s", ", ".join(us), name, path) for name, files in copies.items() for path, us in files.items()]
    parts += [M("%s, imported after %s, gets that copy: %s", lib.consumer, lib.first_loaded_by, lib.path)
              for lib in s.libraries if lib.via == "loaded" and lib.needed.lower() in copies]
    fix = []
    if "torch" in users and "onnxruntime-gpu" in users:
        fix.append(M("# import torch before onnxruntime and call onnxruntime.preload_dlls() (ONNX Runtime 1.21 and later): "
                     "ONNX Runtime then uses torch's CUDA and cuDNN DLLs"))
    fix.append(M("# or keep one copy: take the folder of the other off PATH, or import first the consumer whose copy all of "
                 "them should use"))
    return [F(
        "dll-two-copies", "warning",
        M("CUDA DLLs of one name from different files: %s (%s)", ", ".join(copies), ", ".join(users)),
        M("Windows loads one module of a name per process: whichever of %s is imported first loads its copy, and the "
          "others get that one too, a release they were not built with (\"[WinError 127] The specified procedure could not "
          "be found\" at import, or a slower or failing kernel). %s.", ", ".join(users), join("; ", parts)),
        fix,
    )]


def _import_order(s) -> List:
    """dll-import-order: a framework finds a CUDA DLL only because torch (imported first in the process model) has
    loaded one of that name: a program that imports the framework alone, or first, fails to load it."""
    lost = import_order_only(s)
    if not lost:
        return []
    first = lost[0]
    return [F(
        "dll-import-order", "warning",
        M("CUDA DLLs found only through an earlier import: %s", ", ".join(
            "%s (%s, from %s)" % (lib.needed, lib.consumer, lib.first_loaded_by) for lib in lost)),
        M("%s: Windows uses a DLL already loaded in the process whatever its folder, so these load only where %s was "
          "imported first. Without it, %s is %s.", join("; ", (M("%s gets %s, which %s loaded", lib.consumer, lib.path,
                                                                 lib.first_loaded_by) for lib in lost)),
          first.first_loaded_by, first.needed, windows_where(first.consumer)),
        [M("# import %s before %s in every program that uses it (then it uses %s's copy)", _module(first.first_loaded_by),
           _module(first.consumer), first.first_loaded_by)] + windows_fix(s, first),
    )]


def _module(package: str) -> str:
    """The module a program imports for ``package`` (data/frameworks.json's ``import``; torch's is torch)."""
    from cudaenv.core.resources import load_table

    row = next((r for r in load_table("frameworks")["rows"] if r.get("package") == package and r.get("import")), None)
    return row["import"].get("module", package) if row else package
