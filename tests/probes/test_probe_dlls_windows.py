"""The Windows DLL resolver beyond torch's first search (probes/dlls.py, data/dll_search.json) on the Windows model
machine (tests/windows_machine.py, real PE bytes from tests/pe_builders.py): KnownDLLs, the toolkit folder torch
adds when its lib holds no cudart64 DLL (CUDA_PATH_V<major>_<minor>), ONNX Runtime's CUDA provider (loaded with
LOAD_WITH_ALTERED_SEARCH_PATH: its folder, System32, Windows, PATH; never the os.add_dll_directory folders) and
CuPy's extension modules (Python's flags, with the CUDA folder CuPy adds: CUDA_PATH's bin, else the one above the
nvcc.exe on PATH), and the findings they give."""

from hypothesis import given
from hypothesis import strategies as st

from builders import calls_to
from pe_builders import build_pe
from cudaenv.diagnose import diagnose
from cudaenv.model.snapshot import Framework
from cudaenv.probes.dlls import dll_table, probe_dlls, resolve_dll
from windows_machine import PROGRAMS, PYTHON, SITE, SYSTEM32, TORCH_BUNDLED, WindowsMachine


def _known():
    rows = dll_table()["rows"]
    names = [n.lower() for r in rows if r.get("kind") == "known-dlls" for n in r["names"]]
    return ("|%s|" % "|".join(names), SYSTEM32), names


def test_a_known_dll_is_the_systems_never_a_folders():
    """A KnownDLL (kernel32.dll) is taken from the system whatever a folder earlier in the order holds: no folder is
    searched for it; a name off the list is searched as before."""
    known, names = _known()
    assert "kernel32.dll" in names and "user32.dll" in names
    listings = {"C:\\e\\torch\\lib": {"kernel32.dll": "KERNEL32.dll", "cudart64_12.dll": "cudart64_12.dll"}}
    order = [("C:\\e\\torch\\lib", "dll-dir"), (SYSTEM32, "system32")]

    def join(a, b):
        return a + "\\" + b

    assert resolve_dll("KERNEL32.dll", order, lambda f: listings.get(f, {}), join, known) == (
        SYSTEM32 + "\\KERNEL32.dll", "known-dlls", ())
    assert resolve_dll("KERNEL32.dll", order, lambda f: listings.get(f, {}), join)[1] == "dll-dir"  # without the list
    assert resolve_dll("cudart64_12.dll", order, lambda f: listings.get(f, {}), join, known)[1] == "dll-dir"


def test_no_cuda_dll_is_a_known_dll():
    """The CUDA import names (the table's prefixes) and the KnownDLLs never meet, so KnownDLLs never decide which CUDA
    DLL loads: the resolver's answers for CUDA DLLs are the folders'."""
    _, names = _known()
    prefixes = [r["prefix"] for r in dll_table()["rows"] if r.get("kind") == "cuda-dll"]
    assert prefixes and not [n for n in names if any(n.startswith(p) for p in prefixes)]


def test_torch_adds_its_cuda_toolkit_when_its_lib_has_no_cudart(fake_root):
    """A torch whose lib holds no cudart64 DLL (a build that does not ship CUDA): torch adds the bin of
    CUDA_PATH_V12_8 (else Program Files\\...\\CUDA\\v12.8) with os.add_dll_directory, so its first search finds the
    toolkit's DLLs; a toolkit of another release there is not added."""
    m = WindowsMachine(fake_root).torch("2.8.0+cu128", bundled=["cudnn64_9.dll"])
    m.toolkit("12.8.93", on_path=False)
    found = {x.needed: x for x in probe_dlls(m.host(), SITE, PYTHON, cuda="12.8")}
    toolkit = PROGRAMS + "\\v12.8\\bin"
    assert (found["cudart64_12.dll"].path, found["cudart64_12.dll"].via) == (toolkit + "\\cudart64_12.dll", "add_dll_directory")
    assert found["cudnn64_9.dll"].via == "dll-dir"
    elsewhere = WindowsMachine(fake_root).torch("2.8.0+cu128", bundled=["cudnn64_9.dll"])
    elsewhere.env["CUDA_PATH_V12_8"] = "D:\\cuda\\12.8"  # the variable wins over the default folder
    elsewhere.put("D:\\cuda\\12.8\\bin\\cudart64_12.dll")
    got = {x.needed: x for x in probe_dlls(elsewhere.host(), SITE, PYTHON, cuda="12.8")}
    assert got["cudart64_12.dll"].path == "D:\\cuda\\12.8\\bin\\cudart64_12.dll"
    # torch's lib ships cudart: no toolkit is added, a DLL only the toolkit has is not found by the first search
    shipped = WindowsMachine(fake_root).torch("2.8.0+cu128", bundled=["cudart64_12.dll"])
    got = {x.needed: x for x in probe_dlls(shipped.host(), SITE, PYTHON, cuda="12.8")}
    assert got["cublas64_12.dll"].path is None


def test_onnxruntime_gpu_searches_path_and_not_torchs_folders(fake_root):
    """ONNX Runtime's provider DLL finds the toolkit's cudart on PATH (its search includes PATH: no finding), and
    not the cuDNN in torch\\lib (torch's os.add_dll_directory folders are not in its search): without torch in the
    environment, library-not-found in ONNX Runtime's words."""
    m = WindowsMachine(fake_root).toolkit("12.4.131").onnxruntime_gpu("1.23.2")
    m.put(SITE + "\\torch\\lib\\cudnn64_9.dll")  # a cuDNN in a torch\lib folder that no installed torch loads
    ort = Framework(package="onnxruntime-gpu", version="1.23.2", location=SITE, cuda="12", gpu_build=True)
    got = [x for x in probe_dlls(m.host(), None, PYTHON, frameworks=(ort,)) if x.consumer == "onnxruntime-gpu"]
    by = {x.needed: x for x in got}
    assert by["cudart64_12.dll"].via == "PATH" and by["cudart64_12.dll"].path == PROGRAMS + "\\v12.4\\bin\\cudart64_12.dll"
    assert by["cudnn64_9.dll"].path is None and by["cudnn64_9.dll"].object.endswith("\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll")
    _, found, data = m.findings()
    lost = found["library-not-found"]
    assert "cudnn64_9.dll (onnxruntime-gpu)" in lost["title"] and "LoadLibrary failed with error 126" in lost["detail"]
    assert "dll-only-on-path" not in found  # PATH is ONNX Runtime's own search, not a fallback
    # not a reinstall (the wheel ships no CUDA DLL): the DLL's folder on PATH, or ONNX Runtime's own preload
    assert lost["fix"] == ["# install the CUDA toolkit and the cuDNN that provide cudnn64_9.dll and put their bin folders on PATH, "
                           "or call onnxruntime.preload_dlls() before the first session (ONNX Runtime 1.21 and later: it loads "
                           "torch's or the nvidia wheels' copies)"]


# what the real cupy-cuda12x 14.2.0 wheel's modules import (tests/recorded/cupy-cuda12x-14.2.0-win_amd64-wheel.txt) that
# a CUDA 12 toolkit's bin holds; cuTENSOR.dll and cuTENSORMg.dll (its optional cutensor module) are no toolkit's
CUPY12_TOOLKIT_DLLS = {"cublas64_12.dll", "curand64_10.dll", "cusolver64_11.dll", "cusparse64_12.dll", "cufft64_11.dll",
                       "nvrtc64_120_0.dll"}


def _cupy(m):
    m.cupy("cupy-cuda12x")
    return Framework(package="cupy-cuda12x", version=m.cupy_version, location=SITE, cuda="12", gpu_build=True)


def test_cupy_finds_cuda_through_the_folder_it_adds(fake_root):
    """CuPy adds CUDA_PATH's bin with os.add_dll_directory: the real wheel's modules' CUDA imports resolve there (via
    add_dll_directory, not PATH); with CUDA_PATH unset the folder above the nvcc.exe on PATH; CUDA_PATH on a CUDA 11.8
    toolkit leaves cublas64_12.dll unfound even with a 12.x bin on PATH (Python's flags never search PATH)."""
    m = WindowsMachine(fake_root).toolkit("12.4.131", on_path=False)
    cupy = _cupy(m)
    got = {x.needed: x for x in probe_dlls(m.host(), None, PYTHON, frameworks=(cupy,))}
    assert set(got) == CUPY12_TOOLKIT_DLLS  # the CUDA runtime is linked in statically: no cudart64 import
    assert {x.via for x in got.values()} == {"add_dll_directory"} and got["cublas64_12.dll"].consumer == "cupy-cuda12x"
    assert got["cublas64_12.dll"].object == SITE + "\\cupy_backends\\cuda\\libs\\cublas.cp312-win_amd64.pyd"
    del m.env["CUDA_PATH"]
    m.path.insert(0, PROGRAMS + "\\v12.4\\bin")
    got = {x.needed: x for x in probe_dlls(m.host(), None, PYTHON, frameworks=(cupy,))}
    assert got["cublas64_12.dll"].via == "add_dll_directory"  # the folder above nvcc.exe, added by CuPy
    m.toolkit("11.8.89", on_path=False, dlls=("cudart64_110.dll", "nvcc.exe"))  # CUDA_PATH now names 11.8
    m.path.insert(0, PROGRAMS + "\\v12.4\\bin")
    got = {x.needed: x for x in probe_dlls(m.host(), None, PYTHON, frameworks=(cupy,))}
    assert got["cublas64_12.dll"].path is None
    s = m.snapshot()
    from cudaenv.model.record import replace

    f = {x.id: x for x in diagnose(replace(s, frameworks=(cupy,), libraries=tuple(got.values())))}
    assert "CuPy adds with os.add_dll_directory" in f["library-not-found"].detail


def test_every_cuda_import_of_a_real_cupy_wheel_is_read(fake_root, monkeypatch):
    """The real wheels (tests/recorded/cupy-cuda1{1,2,3}x-*-win_amd64-wheel.txt) list 64 modules, 27 of them under a
    folder named cuda: only the modules of data/dll_search.json's ``modules`` are read (CUPY-WHEEL), so every CUDA
    library a real CuPy imports is resolved; reading the first MAX_OBJECTS named for CUDA (the code before) read 8
    modules of which only cufft and jitify import one. The optional libraries' modules (cuDNN, cuTENSOR:
    CUPY-OPTIONAL) give a record only where their DLL is found."""
    from cudaenv.probes import dlls

    reads = calls_to(monkeypatch, dlls, "_imports")
    wanted = {"cupy-cuda11x": {"cublas64_11.dll", "curand64_10.dll", "cusolver64_11.dll", "cusparse64_11.dll", "cufft64_10.dll",
                               "nvrtc64_112_0.dll"},
              "cupy-cuda12x": CUPY12_TOOLKIT_DLLS,
              "cupy-cuda13x": {"cublas64_13.dll", "curand64_10.dll", "cusolver64_12.dll", "cusparse64_12.dll", "cufft64_12.dll",
                               "nvrtc64_130_0.dll"}}
    for package, names in wanted.items():
        m = WindowsMachine(fake_root).cupy(package)
        cupy = Framework(package=package, version=m.cupy_version, location=SITE, gpu_build=True)
        del reads[:]
        got = probe_dlls(m.host(), None, PYTHON, frameworks=(cupy,))
        assert {x.needed for x in got} == names and {x.path for x in got} == {None}, package  # no toolkit: all not found
        assert len(reads) <= 12 and all("\\libs\\" in r or "\\cupy\\cuda\\" in r for r in reads), reads
        optional = "D:\\opt"
        m.put(optional + "\\cuTENSOR.dll")
        m.put(optional + "\\cudnn64_8.dll")
        m.env["CUDA_PATH"] = "D:\\x"
        m.put("D:\\x\\bin\\cuTENSOR.dll")
        m.put("D:\\x\\bin\\cudnn64_8.dll")
        found = {x.needed: x for x in probe_dlls(m.host(), None, PYTHON, frameworks=(cupy,))}
        assert found["cuTENSOR.dll"].path == "D:\\x\\bin\\cuTENSOR.dll"  # the optional one, where it is found
        assert ("cudnn64_8.dll" in found) == (package == "cupy-cuda11x")  # only the cuda11x wheel has a cuDNN module
        m.pip_remove(package)


def test_a_framework_without_a_consumer_row_or_location_is_skipped(fake_root):
    m = WindowsMachine(fake_root)
    assert probe_dlls(m.host(), None, PYTHON, frameworks=(Framework(package="jax", version="0.8.1", location=SITE),
                                                          Framework(package="onnxruntime-gpu", version="1.23.2"))) == ()


def test_the_collector_resolves_frameworks_without_torch(fake_root):
    """collect.py's frameworks step on Windows: ONNX Runtime's DLLs are resolved with no torch installed."""
    from cudaenv.model.snapshot import Torch
    from cudaenv.probes.collect import _windows_dlls

    m = WindowsMachine(fake_root).toolkit("12.4.131").onnxruntime_gpu()
    ort = Framework(package="onnxruntime-gpu", version="1.23.2", location=SITE)
    got = _windows_dlls(m.host(), [], Torch(python=PYTHON, installed=False), (ort,))
    assert got and {x.consumer for x in got} == {"onnxruntime-gpu"}
    assert _windows_dlls(m.host(), [], Torch(python=PYTHON, installed=False), ()) == ()


def test_torch_shipping_every_dll_has_no_dll_finding(fake_root):
    """The healthy Windows model: a torch wheel that ships its CUDA DLLs beside a toolkit on PATH gives no DLL finding
    (the toolkit's copies are further down, never taken)."""
    m = WindowsMachine(fake_root).torch("2.8.0+cu128", bundled=TORCH_BUNDLED).toolkit("12.4.131")
    _, found, data = m.findings()
    assert not {"dll-only-on-path", "library-not-found", "library-shadowed"} & set(found)
    cudart = next(x for x in data["libraries"] if x["needed"] == "cudart64_12.dll")
    assert cudart["via"] == "dll-dir" and cudart["others"] == [PROGRAMS + "\\v12.4\\bin\\cudart64_12.dll"]


def test_jax_on_native_windows_is_no_gpu_by_design_not_a_cpu_build(fake_root):
    """jax with jaxlib on native Windows (JAX-WINDOWS: no NVIDIA GPU there; WSL2 only): the platform verdict, never the
    CPU-build one whose `pip install "jax[cudaNN]"` has no Windows wheel to install."""
    m = WindowsMachine(fake_root)
    m.dist("jax", "0.8.1", ["jax\\__init__.py"])
    m.dist("jaxlib", "0.8.1", ["jaxlib\\__init__.py"])
    _, found, _ = m.findings()
    f = found["framework-no-gpu-on-platform"]
    assert f["title"] == "jax 0.8.1 has no GPU support on native windows" and "From version" not in f["detail"]
    assert "WSL2" in f["fix"][0] and "framework-cpu-build" not in found


def test_torch_and_onnxruntime_resolving_one_dll_name_to_two_files(fake_root):
    """The reverse trap on Windows: torch ships cudnn64_9.dll in torch\\lib, and ONNX Runtime's search (its folder,
    System32, Windows, PATH) takes a cuDNN installer's cudnn64_9.dll from PATH (the layout of
    microsoft/onnxruntime#24266): one module of that name per process, so the first imported decides. With the name
    carrying the major (cudnn64_9, cudart64_12) another major can never share it; another release can."""
    m = WindowsMachine(fake_root).torch("2.8.0+cu128").onnxruntime_gpu("1.23.2")
    m.put("C:\\Program Files\\NVIDIA\\CUDNN\\v9.6\\bin\\12.6\\cudnn64_9.dll")
    m.path.append("C:\\Program Files\\NVIDIA\\CUDNN\\v9.6\\bin\\12.6")
    _, found, data = m.findings()
    f = found["dll-two-copies"]
    assert f["title"] == "CUDA DLLs of one name from different files: cudnn64_9.dll (torch, onnxruntime-gpu)"
    assert "onnxruntime-gpu resolves cudnn64_9.dll to C:\\Program Files\\NVIDIA\\CUDNN\\v9.6\\bin\\12.6\\cudnn64_9.dll" in f["detail"]
    # the process model: torch, imported first, has loaded its own cudnn64_9.dll, which ONNX Runtime then gets
    assert "onnxruntime-gpu, imported after torch, gets that copy: %s\\torch\\lib\\cudnn64_9.dll" % SITE in f["detail"]
    assert "preload_dlls" in f["fix"][0] and f["fix_kind"] == "user-code"
    # cudart64_12.dll, which ONNX Runtime's own search finds nowhere, is torch's loaded copy: no library-not-found,
    # but a program that imports onnxruntime without torch first fails (dll-import-order)
    assert "library-not-found" not in found
    assert found["dll-import-order"]["title"].startswith("CUDA DLLs found only through an earlier import: cudart64_12.dll (onnxruntime-gpu, from torch)")
    # one file for both (ONNX Runtime alone; or torch alone): no finding
    alone = WindowsMachine(fake_root).onnxruntime_gpu("1.23.2")
    alone.pip_remove("torch")
    alone.put("C:\\Program Files\\NVIDIA\\CUDNN\\v9.6\\bin\\12.6\\cudnn64_9.dll")
    alone.path.append("C:\\Program Files\\NVIDIA\\CUDNN\\v9.6\\bin\\12.6")
    assert "dll-two-copies" not in alone.findings()[1]


def test_a_delay_loaded_dll_names_its_windows_importer_by_file_name():
    """The report's library line names the DLL that delay-loads a CUDA DLL by its file name, on Windows paths too."""
    from cudaenv.model.snapshot import LoadedLibrary
    from cudaenv.render.report import library_facts

    lib = LoadedLibrary(consumer="torch", object="C:\\e\\torch\\lib\\torch_cuda.dll", needed="cufft64_11.dll", loaded_by="dlopen")
    assert library_facts(lib) == "cufft64_11.dll: not found (dlopen by torch_cuda.dll)"
    found = LoadedLibrary(consumer="torch", object="/e/torch/lib/libtorch_cuda.so", needed="libnvrtc.so.12", loaded_by="dlopen",
                          path="/e/nvidia/cuda_nvrtc/lib/libnvrtc.so.12", via="runpath")
    assert library_facts(found) == "libnvrtc.so.12: /e/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 (via runpath, dlopen by libtorch_cuda.so)"
    # Windows' loaded-module list: whose import loaded it first, and what the consumer's own search takes (or not)
    loaded = LoadedLibrary(consumer="onnxruntime-gpu", object="C:\\e\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll",
                           needed="cudnn64_9.dll", path="C:\\e\\torch\\lib\\cudnn64_9.dll", via="loaded", first_loaded_by="torch",
                           own="C:\\cudnn\\bin\\cudnn64_9.dll")
    assert library_facts(loaded) == ("cudnn64_9.dll: C:\\e\\torch\\lib\\cudnn64_9.dll (via loaded, loaded first by torch, "
                                     "its own search takes C:\\cudnn\\bin\\cudnn64_9.dll)")
    from cudaenv.model.record import replace

    assert library_facts(replace(loaded, own=None)).endswith("(via loaded, loaded first by torch, its own search finds none)")


def test_a_frameworks_record_is_read_for_at_most_max_objects_modules(fake_root, monkeypatch):
    """A RECORD listing many modules: the ones named for CUDA are read first, and at most MAX_OBJECTS files are read
    (counted), so a big framework costs a bounded number of PE reads."""
    from cudaenv.probes import dlls

    m = WindowsMachine(fake_root)
    files = ["cupy\\_core\\m%02d.cp312-win_amd64.pyd" % i for i in range(30)]
    for f in files:
        m.put(SITE + "\\" + f, build_pe(["python312.dll", "KERNEL32.dll"]))
    module = "cupy_backends\\cuda\\api\\runtime.cp312-win_amd64.pyd"
    m.put(SITE + "\\" + module, build_pe(["cudart64_12.dll"]))
    m.dist("cupy-cuda12x", "13.6.0", files + [module])
    m.toolkit("12.4.131", on_path=False)
    reads = calls_to(monkeypatch, dlls, "_imports")
    cupy = Framework(package="cupy-cuda12x", version="13.6.0", location=SITE, cuda="12")
    got = probe_dlls(m.host(), None, PYTHON, frameworks=(cupy,))
    assert [x.needed for x in got] == ["cudart64_12.dll"] and got[0].via == "add_dll_directory"
    assert len(reads) == dlls.MAX_OBJECTS and reads[0].endswith(module)


def test_paddle_loads_cudnn_and_cublas_by_name(fake_root):
    """PaddlePaddle (PADDLE-DYNLOAD): cudnn64_<cuDNN major>.dll and cublas64_<major><minor>.dll, else cublas64_<major>.dll,
    by LoadLibrary at run time: the standard order (PATH included), then the toolkit folder it was built with
    (NVIDIA's default folder for its CUDA); a cuDNN found nowhere is library-not-found in Paddle's words, whose fix
    names the CUDA and cuDNN it is built for."""
    m = WindowsMachine(fake_root).paddle("2.6.2", cuda="11.8", cudnn="8.9.7")
    # a CUDA 11.8 toolkit's bin: cuFFT and cuRAND are 10.x, cuSOLVER and cuSPARSE 11.x in CUDA 11 (CUDA-WIN-NAMES' patterns)
    m.toolkit("11.8.89", on_path=False, dlls=("cudart64_110.dll", "cublas64_11.dll", "curand64_10.dll", "cusolver64_11.dll",
                                               "cusparse64_11.dll", "cufft64_10.dll", "nvcc.exe"))
    paddle = Framework(package="paddlepaddle-gpu", version="2.6.2", location=SITE, cuda="11.8", cudnn="8.9")
    got = {x.needed: x for x in probe_dlls(m.host(), None, PYTHON, frameworks=(paddle,))}
    assert set(got) == {"cudnn64_8.dll", "cublas64_11.dll", "curand64_10.dll", "cusolver64_11.dll", "cusparse64_11.dll",
                        "cufft64_10.dll"}  # each the first of its alternatives found (CUDA 11 and later: <name>64_10 last)
    assert {got[n].via for n in got if n != "cudnn64_8.dll"} == {"build-toolkit"}
    assert (got["cublas64_11.dll"].via, got["cublas64_11.dll"].loaded_by) == ("build-toolkit", "dlopen")
    assert got["cudnn64_8.dll"].path is None and got["cudnn64_8.dll"].object.endswith("\\paddle\\base\\libpaddle.pyd")
    _, found, _ = m.findings()
    lost = found["library-not-found"]
    assert "cudnn64_8.dll (paddlepaddle-gpu)" in lost["title"] and "Paddle depends on is not configured correctly" in lost["detail"]
    assert lost["fix"] == ["# install the CUDA 11.8 toolkit and cuDNN 8.9.7 (the ones paddlepaddle-gpu is built for) and put "
                           "their bin folders on PATH",
                           "# or set FLAGS_cudnn_dir (cuDNN) or FLAGS_cuda_dir (cuBLAS, cuRAND, cuSOLVER, cuSPARSE, cuFFT) to the folder that holds cudnn64_8.dll"]
    assert "FLAGS_cudnn_dir (cuDNN) or FLAGS_cuda_dir (cuBLAS, cuRAND, cuSOLVER, cuSPARSE, cuFFT)" in lost["detail"]
    m.put("C:\\tools\\cudnn\\bin\\cudnn64_8.dll")
    m.path.append("C:\\tools\\cudnn\\bin")
    got = {x.needed: x for x in probe_dlls(m.host(), None, PYTHON, frameworks=(paddle,))}
    assert got["cudnn64_8.dll"].via == "PATH"
    assert "library-not-found" not in m.findings()[1]


def test_process_loads_gives_a_later_consumer_the_module_loaded_first():
    """The loaded-module list (MS-ORDER), pure: a later consumer's by-name load of a name another consumer loaded
    earlier gets that file (via "loaded"), with its own search's answer kept in ``own`` (None: it found none); the
    same file, a KnownDLL, or a name nobody loaded earlier is left as it is; the first file loaded of a name is the
    one every later consumer gets."""
    from cudaenv.model.snapshot import LoadedLibrary
    from cudaenv.probes.dlls import process_loads

    torch_copy, path_copy, other = "C:\\e\\torch\\lib\\cudnn64_9.dll", "C:\\cudnn\\bin\\cudnn64_9.dll", "D:\\x\\cudnn64_9.dll"
    libs = [LoadedLibrary(consumer="onnxruntime-gpu", object="o.dll", needed="cudnn64_9.dll", path=path_copy, via="PATH"),
            LoadedLibrary(consumer="onnxruntime-gpu", object="o.dll", needed="CUDART64_12.dll", via=None),
            LoadedLibrary(consumer="cupy-cuda12x", object="c.pyd", needed="cudnn64_9.dll", path=other, via="add_dll_directory",
                          others=(torch_copy,)),
            LoadedLibrary(consumer="cupy-cuda12x", object="c.pyd", needed="nvrtc64_120_0.dll", path="C:\\t\\nvrtc64_120_0.dll", via="PATH"),
            LoadedLibrary(consumer="paddlepaddle-gpu", object="p.pyd", needed="nvrtc64_120_0.dll", path="C:\\p\\nvrtc64_120_0.dll", via="PATH"),
            LoadedLibrary(consumer="paddlepaddle-gpu", object="p.pyd", needed="kernel32.dll", path="C:\\Windows\\System32\\kernel32.dll",
                          via="known-dlls")]
    preloaded = {"cudnn64_9.dll": (torch_copy, "torch"), "cudart64_12.dll": ("C:\\e\\torch\\lib\\cudart64_12.dll", "torch"),
                 "kernel32.dll": ("C:\\e\\torch\\lib\\kernel32.dll", "torch")}
    got = process_loads(libs, preloaded, lambda p: bool(p and "\\e\\" in p))
    ort, cudart, cupy, nvrtc, paddle, known = got
    assert (ort.path, ort.via, ort.own, ort.first_loaded_by, ort.from_wheel) == (torch_copy, "loaded", path_copy, "torch", True)
    assert (cudart.path, cudart.via, cudart.own) == ("C:\\e\\torch\\lib\\cudart64_12.dll", "loaded", None)  # matched without case
    assert (cupy.path, cupy.own, cupy.others) == (torch_copy, other, (other,))  # torch's copy is no longer "further down"
    assert (nvrtc.via, paddle.path, paddle.via, paddle.own, paddle.first_loaded_by) == (
        "PATH", "C:\\t\\nvrtc64_120_0.dll", "loaded", "C:\\p\\nvrtc64_120_0.dll", "cupy-cuda12x")
    assert known == libs[5]
    assert process_loads(libs, {}, lambda p: False)[0] == libs[0]


def test_torch_imported_first_decides_the_cuda_dlls_onnxruntime_gets(fake_root):
    """On the Windows model: torch ships cudart64_12.dll and cudnn64_9.dll in torch\\lib, and `import torch` loads them;
    ONNX Runtime's own search finds neither (no toolkit, no cuDNN on PATH), yet in the usual program (torch imported
    first) it gets torch's: no library-not-found, but dll-import-order, whose fix is the import order or ONNX Runtime's
    own way to the DLLs, and whose detail says how a program without torch first fails."""
    m = WindowsMachine(fake_root).torch("2.8.0+cu128").onnxruntime_gpu("1.23.2")
    ort = Framework(package="onnxruntime-gpu", version="1.23.2", location=SITE, cuda="12", gpu_build=True)
    got = {x.needed: x for x in probe_dlls(m.host(), SITE, PYTHON, cuda="12.8", frameworks=(ort,)) if x.consumer == "onnxruntime-gpu"}
    lib = got["cudnn64_9.dll"]
    assert (lib.path, lib.via, lib.own, lib.first_loaded_by) == (SITE + "\\torch\\lib\\cudnn64_9.dll", "loaded", None, "torch")
    assert got["cufft64_11.dll"].via == "loaded"
    _, found, data = m.findings()
    assert "library-not-found" not in found and "dll-two-copies" not in found
    f = found["dll-import-order"]
    assert f["title"].startswith("CUDA DLLs found only through an earlier import: cudart64_12.dll (onnxruntime-gpu, from torch), ")
    assert "onnxruntime-gpu gets %s\\torch\\lib\\cudart64_12.dll, which torch loaded" % SITE in f["detail"]
    assert "LoadLibrary failed with error 126" in f["detail"] and f["fix_kind"] == "user-code"
    assert f["fix"][0] == "# import torch before onnxruntime in every program that uses it (then it uses torch's copy)"
    assert "preload_dlls" in f["fix"][1]
    entry = next(x for x in data["libraries"] if x["consumer"] == "onnxruntime-gpu" and x["needed"] == "cudnn64_9.dll")
    assert (entry["via"], entry["first_loaded_by"], entry["own"]) == ("loaded", "torch", None)
    # the same machine without torch: ONNX Runtime's own search decides, and it finds none
    m.pip_remove("torch")
    _, found, _ = m.findings()
    assert "dll-import-order" not in found and "cudnn64_9.dll (onnxruntime-gpu)" in found["library-not-found"]["title"]


def _paddle(fake_root):
    m = WindowsMachine(fake_root).paddle("2.6.2", cuda="11.8", cudnn="8.9.7")
    return m, Framework(package="paddlepaddle-gpu", version="2.6.2", location=SITE, cuda="11.8", cudnn="8.9")


def test_paddle_honours_its_flags_dir_environment_variables(fake_root):
    """PADDLE-FLAGS: FLAGS_cudnn_dir names the folder cuDNN is loaded from (by full path, before any search: even a
    cudnn64_8.dll on PATH is not taken); on Windows cuBLAS takes FLAGS_cuda_dir, and FLAGS_cublas_dir (Linux's) is not
    read; a flag whose folder lacks the DLL falls through to the search, which then finds none."""
    m, paddle = _paddle(fake_root)
    m.put("C:\\tools\\cudnn\\bin\\cudnn64_8.dll")
    for name in ("cublas64_11.dll", "curand64_10.dll", "cusolver64_11.dll", "cusparse64_11.dll", "cufft64_10.dll"):
        m.put("C:\\cuda118\\bin\\" + name)
    m.put("C:\\onpath\\cudnn64_8.dll")
    m.path.append("C:\\onpath")
    m.env.update(FLAGS_cudnn_dir="C:\\tools\\cudnn\\bin", FLAGS_cublas_dir="C:\\cuda118\\bin")
    got = {x.needed: x for x in probe_dlls(m.host(), None, PYTHON, frameworks=(paddle,))}
    assert (got["cudnn64_8.dll"].path, got["cudnn64_8.dll"].via) == ("C:\\tools\\cudnn\\bin\\cudnn64_8.dll", "flag-dir")
    assert got["cudnn64_8.dll"].others == ("C:\\onpath\\cudnn64_8.dll",)
    assert got["cublas64_11.dll"].path is None  # FLAGS_cublas_dir is not Windows' flag for cuBLAS
    m.env["FLAGS_cuda_dir"] = "C:\\cuda118\\bin"
    got = {x.needed: x for x in probe_dlls(m.host(), None, PYTHON, frameworks=(paddle,))}
    assert (got["cublas64_11.dll"].path, got["cublas64_11.dll"].via) == ("C:\\cuda118\\bin\\cublas64_11.dll", "flag-dir")
    assert got["cufft64_10.dll"].via == got["cusolver64_11.dll"].via == "flag-dir"  # cuRAND, cuSOLVER, ... take it too
    _, found, _ = m.findings()
    assert "library-not-found" not in found
    # Python on Windows hands os.environ's keys over in upper case (its os docs); Windows reads them without case
    del m.env["FLAGS_cuda_dir"], m.env["FLAGS_cudnn_dir"]
    m.env.update(FLAGS_CUDA_DIR="C:\\cuda118\\bin", FLAGS_CUDNN_DIR="C:\\tools\\cudnn\\bin")
    got = {x.needed: x for x in probe_dlls(m.host(), None, PYTHON, frameworks=(paddle,))}
    assert {x.via for x in got.values()} == {"flag-dir"}
    del m.env["FLAGS_CUDNN_DIR"]
    m.env["FLAGS_cudnn_dir"] = "C:\\empty"  # no cudnn64_8.dll there: the search decides (PATH)
    got = {x.needed: x for x in probe_dlls(m.host(), None, PYTHON, frameworks=(paddle,))}
    assert (got["cudnn64_8.dll"].path, got["cudnn64_8.dll"].via) == ("C:\\onpath\\cudnn64_8.dll", "PATH")


def test_paddle_puts_its_own_folders_first_on_path(fake_root):
    """PADDLE-PATH: import paddle puts libpaddle.pyd's folder and paddle\\libs first on PATH in its own process, so a
    cudnn64_8.dll shipped in paddle\\libs is found by the by-name load, ahead of one on the machine's PATH."""
    m, paddle = _paddle(fake_root)
    m.put(SITE + "\\paddle\\libs\\cudnn64_8.dll")
    m.put("C:\\onpath\\cudnn64_8.dll")
    m.path.append("C:\\onpath")
    got = {x.needed: x for x in probe_dlls(m.host(), None, PYTHON, frameworks=(paddle,))}
    lib = got["cudnn64_8.dll"]
    assert (lib.path, lib.via, lib.others) == (SITE + "\\paddle\\libs\\cudnn64_8.dll", "PATH", ("C:\\onpath\\cudnn64_8.dll",))
    assert lib.from_wheel


def test_a_flags_dir_load_is_by_full_path_not_the_loaded_module(fake_root):
    """A load by full path (Paddle's FLAGS_cudnn_dir) is no search: torch's cudnn64_9.dll, loaded first, does not
    stand in for it, while Paddle's cuBLAS, loaded by name, gets torch's cublas64_12.dll."""
    m = WindowsMachine(fake_root).torch("2.8.0+cu128").paddle("3.0.0", cuda="12.6", cudnn="9.5.1")
    paddle = Framework(package="paddlepaddle-gpu", version="3.0.0", location=SITE, cuda="12.6", cudnn="9.5")
    m.put("C:\\cudnn9\\bin\\cudnn64_9.dll")
    m.env["FLAGS_cudnn_dir"] = "C:\\cudnn9\\bin"
    got = {x.needed: x for x in probe_dlls(m.host(), SITE, PYTHON, cuda="12.8", frameworks=(paddle,)) if x.consumer == paddle.package}
    assert (got["cudnn64_9.dll"].path, got["cudnn64_9.dll"].via) == ("C:\\cudnn9\\bin\\cudnn64_9.dll", "flag-dir")
    assert (got["cublas64_12.dll"].via, got["cublas64_12.dll"].first_loaded_by) == ("loaded", "torch")


def test_cupy_preloads_its_cudnn_from_cupy_cuda_lib_path(fake_root):
    """CUPY-PRELOAD, on the real cupy-cuda11x 13.6.0 wheel and its real _wheel.json (cuDNN 8.8.1: cudnn64_8.dll and its
    six sub-libraries): the pip wheel loads those by full path from CUPY_CUDA_LIB_PATH\\11.x\\cudnn\\8.8.1\\bin
    (default %USERPROFILE%\\.cupy\\cuda_lib) before its cuDNN module is loaded, so that module's import of
    cudnn64_8.dll gets that file (via preload), whatever its own search finds (kept in others); without a preloaded
    file its own search decides."""
    m = WindowsMachine(fake_root).toolkit("11.8.89", on_path=False, dlls=("cudart64_110.dll", "cudnn64_8.dll", "nvcc.exe"))
    m.cupy("cupy-cuda11x")
    cupy = Framework(package="cupy-cuda11x", version=m.cupy_version, location=SITE, cuda="11", gpu_build=True)
    toolkit_copy = PROGRAMS + "\\v11.8\\bin\\cudnn64_8.dll"

    def cudnn():
        return next(x for x in probe_dlls(m.host(), None, PYTHON, frameworks=(cupy,)) if x.needed == "cudnn64_8.dll")

    assert (cudnn().path, cudnn().via) == (toolkit_copy, "add_dll_directory")  # nothing preloaded: CUDA_PATH's bin
    m.put("D:\\cupylibs\\11.x\\cudnn\\8.8.1\\bin\\cudnn64_8.dll")
    m.env["CUPY_CUDA_LIB_PATH"] = "D:\\cupylibs"
    lib = cudnn()
    assert (lib.path, lib.via, lib.others) == ("D:\\cupylibs\\11.x\\cudnn\\8.8.1\\bin\\cudnn64_8.dll", "preload", (toolkit_copy,))
    del m.env["CUPY_CUDA_LIB_PATH"]
    m.env["USERPROFILE"] = "C:\\Users\\me"
    m.put("C:\\Users\\me\\.cupy\\cuda_lib\\11.x\\cudnn\\8.8.1\\bin\\cudnn64_8.dll")
    assert cudnn().path == "C:\\Users\\me\\.cupy\\cuda_lib\\11.x\\cudnn\\8.8.1\\bin\\cudnn64_8.dll"
    # the real cupy-cuda12x 14.2.0 wheel preloads cuTENSOR 2.4.1 (cutensor.dll, cutensorMg.dll; no cuDNN any more)
    m.pip_remove("cupy-cuda11x")
    cupy = _cupy(m)
    m.put("C:\\Users\\me\\.cupy\\cuda_lib\\12.x\\cutensor\\2.4.1\\bin\\cutensor.dll")
    got = {x.needed: x for x in probe_dlls(m.host(), None, PYTHON, frameworks=(cupy,))}
    assert (got["cuTENSOR.dll"].path, got["cuTENSOR.dll"].via) == (
        "C:\\Users\\me\\.cupy\\cuda_lib\\12.x\\cutensor\\2.4.1\\bin\\cutensor.dll", "preload")
    assert "cuTENSORMg.dll" not in got  # optional, preloaded nowhere, found nowhere: no record


def test_a_conda_cupy_preloads_nothing_and_adds_cuda_path_itself(fake_root):
    """CUPY-PRELOAD: a conda package (_wheel.json's packaging conda; constructed: the real cupy-cuda12x 14.2.0
    _wheel.json with packaging "conda") preloads nothing, and CuPy adds CUDA_PATH itself (not its bin) with
    os.add_dll_directory."""
    import json

    from windows_machine import CUPY_WHEELS

    config = dict(json.loads(CUPY_WHEELS["cupy-cuda12x"][1]["_wheel.json"]), packaging="conda")
    m = WindowsMachine(fake_root).cupy("cupy-cuda12x", config=config)
    m.env.update(CUDA_PATH="C:\\envs\\cp\\Library\\bin", USERPROFILE="C:\\Users\\me")
    m.put("C:\\envs\\cp\\Library\\bin\\cublas64_12.dll")
    m.put("C:\\envs\\cp\\Library\\bin\\cutensor.dll")
    m.put("C:\\Users\\me\\.cupy\\cuda_lib\\12.x\\cutensor\\2.4.1\\bin\\cutensor.dll")
    cupy = Framework(package="cupy-cuda12x", version=m.cupy_version, location=SITE, cuda="12", gpu_build=True)
    got = {x.needed: x for x in probe_dlls(m.host(), None, PYTHON, frameworks=(cupy,))}
    assert (got["cuTENSOR.dll"].path, got["cuTENSOR.dll"].via) == ("C:\\envs\\cp\\Library\\bin\\cutensor.dll", "add_dll_directory")
    assert got["cublas64_12.dll"].via == "add_dll_directory"


def test_torch_imported_first_gives_cupy_its_cuda_dlls(fake_root):
    """torch's torch\\lib DLLs are loaded at import torch; the real CuPy wheel's modules import cublas64_12.dll,
    cufft64_11.dll, ... by name, so they get torch's copies, not the CUDA_PATH toolkit's their own search takes:
    dll-two-copies names both files."""
    m = WindowsMachine(fake_root).torch("2.8.0+cu128")
    cupy = _cupy(m)
    m.toolkit("12.4.131", on_path=False)
    got = {x.needed: x for x in probe_dlls(m.host(), SITE, PYTHON, cuda="12.8", frameworks=(cupy,)) if x.consumer == cupy.package}
    lib = got["cublas64_12.dll"]
    assert (lib.path, lib.via, lib.own) == (SITE + "\\torch\\lib\\cublas64_12.dll", "loaded", PROGRAMS + "\\v12.4\\bin\\cublas64_12.dll")
    assert got["cusolver64_11.dll"].via == "add_dll_directory"  # torch ships no cuSOLVER: CuPy's own search decides
    _, found, _ = m.findings()
    assert PROGRAMS + "\\v12.4\\bin\\cublas64_12.dll" in found["dll-two-copies"]["detail"]


def test_known_dll_names_come_from_the_machines_key_when_read():
    """known_dll_names: the value data that are plain DLL file names, DllDirectory (the folder) left out, lower case,
    once each; nothing usable: () (the documented list is used instead)."""
    from cudaenv.probes.dlls import known_dll_names

    values = {"advapi32": "advapi32.dll", "KERNEL32": "KERNEL32.DLL", "DllDirectory": "%SystemRoot%\\system32",
              "DllDirectory32": "%SystemRoot%\\syswow64", "x": "..\\evil.dll", "y": "not-a-dll", "z": "kernel32.dll"}
    assert known_dll_names(values) == ("advapi32.dll", "kernel32.dll")
    assert known_dll_names(None) == () and known_dll_names({"DllDirectory": "C:\\Windows\\System32"}) == ()


def test_the_probe_uses_the_machines_known_dlls(fake_root, monkeypatch):
    """The resolver's KnownDLLs are the machine's registry key where it can be read (host/registry.read_values), else the
    table's documented defaults. The key here is constructed to list a CUDA DLL name, which no real list does, so that
    the difference shows: that name is then the system's copy, whatever torch\\lib holds."""
    from cudaenv.host import registry
    from cudaenv.probes import dlls

    m = WindowsMachine(fake_root).torch("2.8.0+cu128")
    host = m.host()
    asked = []
    monkeypatch.setattr(registry, "read_values", lambda h, key: asked.append((h, key)) and None or {
        "kernel32": "kernel32.dll", "cudart": "cudart64_12.dll"})
    got = {x.needed: x for x in probe_dlls(host, SITE, PYTHON, cuda="12.8")}
    assert (got["cudart64_12.dll"].path, got["cudart64_12.dll"].via) == (SYSTEM32 + "\\cudart64_12.dll", "known-dlls")
    assert asked == [(host, next(r["key"] for r in dlls.dll_table()["rows"] if r.get("kind") == "known-dlls"))]
    assert asked[0][1] == "SYSTEM\\CurrentControlSet\\Control\\Session Manager\\KnownDLLs"
    monkeypatch.setattr(registry, "read_values", lambda h, key: None)  # unreadable: the documented list (no CUDA name)
    assert {x.needed: x for x in probe_dlls(host, SITE, PYTHON, cuda="12.8")}["cudart64_12.dll"].via == "dll-dir"


def test_a_real_known_dlls_key_lists_no_cuda_dll_and_changes_no_cuda_answer(fake_root, monkeypatch):
    """A real `reg query` of the KnownDLLs key (tests/recorded/reg-query-knowndlls-win11.txt) read as host/registry
    returns it: 35 DLL names (value names such as *kernel32 and _wow64cpu are no module names; data in any case: PSAPI.DLL),
    among them the documented defaults still present on that machine, none a CUDA DLL; the probe on the healthy model
    then gives the same CUDA answers as with the documented list, and kernel32.dll is the system's."""
    from builders import recorded
    from cudaenv.host import registry
    from cudaenv.probes.dlls import known_dll_names
    from windows_machine import reg_query_values

    values = reg_query_values(recorded("reg-query-knowndlls-win11.txt"))
    names = known_dll_names(values)
    assert len(values) == len(names) == 35 and values["*kernel32"] == "kernel32.dll" and "psapi.dll" in names
    _, documented = _known()
    assert set(documented) - set(names) == {"crtdll.dll", "lz32.dll", "olecli32.dll", "olesvr32.dll", "version.dll"}
    prefixes = [r["prefix"] for r in dll_table()["rows"] if r.get("kind") == "cuda-dll"]
    assert not [n for n in names if any(n.startswith(p) for p in prefixes)]
    m = WindowsMachine(fake_root).torch("2.8.0+cu128").onnxruntime_gpu("1.23.2")
    ort = Framework(package="onnxruntime-gpu", version="1.23.2", location=SITE, cuda="12", gpu_build=True)
    monkeypatch.setattr(registry, "read_values", lambda h, key: None)
    expected = probe_dlls(m.host(), SITE, PYTHON, cuda="12.8", frameworks=(ort,))
    monkeypatch.setattr(registry, "read_values", lambda h, key: values)
    assert probe_dlls(m.host(), SITE, PYTHON, cuda="12.8", frameworks=(ort,)) == expected
    listing = {SITE + "\\torch\\lib": {"kernel32.dll": "kernel32.dll"}}
    known = ("|%s|" % "|".join(names), SYSTEM32)
    assert resolve_dll("KERNEL32.dll", [(SITE + "\\torch\\lib", "dll-dir")], lambda f: listing.get(f, {}),
                       lambda a, b: a + "\\" + b, known)[1] == "known-dlls"


def test_process_loads_replays_a_stated_import_order():
    """process_loads with the program's order: each consumer's full-path loads at its turn (torch's torch\\lib DLLs at
    import torch), a framework imported first loads its own by name and torch's by-name imports then get that file
    (onnxruntime#24266), and a consumer the order does not name is resolved as a program of its own."""
    from cudaenv.model.snapshot import LoadedLibrary
    from cudaenv.probes.dlls import process_loads

    torch_copy, paddle_copy = "C:\\e\\torch\\lib\\cublas64_12.dll", "C:\\cuda\\bin\\cublas64_12.dll"
    libs = [LoadedLibrary(consumer="torch", object="t.dll", needed="cublas64_12.dll", path=torch_copy, via="dll-dir"),
            LoadedLibrary(consumer="paddlepaddle-gpu", object="p.pyd", needed="cublas64_12.dll", path=paddle_copy, via="PATH"),
            LoadedLibrary(consumer="cupy-cuda12x", object="c.pyd", needed="cublas64_12.dll", path=None, via=None)]
    preloaded = {"cublas64_12.dll": (torch_copy, "torch")}
    default = process_loads(libs, preloaded, lambda p: False)
    assert [(x.consumer, x.path, x.via) for x in default] == [
        ("torch", torch_copy, "dll-dir"), ("paddlepaddle-gpu", torch_copy, "loaded"), ("cupy-cuda12x", torch_copy, "loaded")]
    got = process_loads(libs, preloaded, lambda p: False, ["paddlepaddle-gpu", "torch"])
    assert [(x.consumer, x.path, x.via, x.first_loaded_by, x.own) for x in got] == [
        ("paddlepaddle-gpu", paddle_copy, "PATH", None, None),
        ("torch", paddle_copy, "loaded", "paddlepaddle-gpu", torch_copy),  # torch's by-name import gets Paddle's
        ("cupy-cuda12x", None, None, None, None)]  # not imported by this program: its own search alone
    # a consumer's by-name import of a name it loaded by full path at an earlier step gets that file (via preload)
    ort = LoadedLibrary(consumer="onnxruntime-gpu", object="o.dll", needed="cudnn64_9.dll", path=None)
    got = process_loads([ort], {"cudnn64_9.dll": ("C:\\w\\cudnn64_9.dll", "onnxruntime-gpu", "onnxruntime.preload_dlls")},
                        lambda p: True, ["onnxruntime.preload_dlls", "onnxruntime-gpu"])
    assert (got[0].path, got[0].via, got[0].own, got[0].from_wheel) == ("C:\\w\\cudnn64_9.dll", "preload", None, True)


def test_consumers_in_order_maps_modules_to_the_installed_packages():
    from cudaenv.probes.dlls import consumers_in_order

    packages = ["torch", "onnxruntime-gpu", "cupy-cuda12x", "paddlepaddle-gpu"]
    assert consumers_in_order(["paddle", "torch", "numpy", "cupy"], packages) == ["paddlepaddle-gpu", "torch", "cupy-cuda12x"]
    # the provider DLL loads at the first session: after the program's preload call, wherever onnxruntime is imported
    assert consumers_in_order(["onnxruntime", "onnxruntime.preload_dlls", "torch"], packages) == [
        "onnxruntime.preload_dlls", "onnxruntime-gpu", "torch"]
    assert consumers_in_order([], packages) == [] and consumers_in_order(["torch"], ["onnxruntime-gpu"]) == []


def test_onnxruntime_imported_before_torch_finds_no_cuda_runtime_of_its_own(fake_root):
    """The order `import onnxruntime` then `import torch` (doctor --import-order onnxruntime,torch): ONNX Runtime's own
    search finds no cudart64_12.dll (library-not-found, with its words), it loads a cuDNN installer's cudnn64_9.dll
    from PATH first, and torch's by-name import of cudnn64_9.dll then gets that one (dll-two-copies says so); no
    dll-import-order, whose premise (torch first) the program does not keep. The usual order gives no
    library-not-found."""
    m = WindowsMachine(fake_root).torch("2.8.0+cu128").onnxruntime_gpu("1.23.2")
    cudnn = "C:\\Program Files\\NVIDIA\\CUDNN\\v9.6\\bin\\12.6"
    m.put(cudnn + "\\cudnn64_9.dll")
    m.path.append(cudnn)
    _, found, _ = m.findings()
    assert "library-not-found" not in found and "dll-import-order" in found
    m.import_order = ("onnxruntime", "torch")
    _, found, data = m.findings()
    assert data["import_order"] == ["onnxruntime", "torch"]
    assert "cudart64_12.dll (onnxruntime-gpu)" in found["library-not-found"]["title"] and "dll-import-order" not in found
    torch_cudnn = next(x for x in data["libraries"] if x["consumer"] == "torch" and x["needed"] == "cudnn64_9.dll")
    assert (torch_cudnn["path"], torch_cudnn["via"], torch_cudnn["first_loaded_by"]) == (cudnn + "\\cudnn64_9.dll", "loaded", "onnxruntime-gpu")
    assert "torch, imported after onnxruntime-gpu, gets that copy: %s\\cudnn64_9.dll" % cudnn in found["dll-two-copies"]["detail"]


def test_paddle_imported_first_gives_torch_its_cublas(fake_root):
    """PaddlePaddle imported before torch (doctor --import-order paddle,torch): its by-name cuBLAS load takes the CUDA
    12.4 toolkit's cublas64_12.dll from PATH at its first use, and torch's torch_cuda.dll then gets that one, not its
    own (dll-two-copies); in the usual order Paddle gets torch's."""
    m = WindowsMachine(fake_root).torch("2.8.0+cu128").paddle("3.0.0", cuda="12.6", cudnn="9.5.1").toolkit("12.4.131")
    paddle = Framework(package="paddlepaddle-gpu", version="3.0.0", location=SITE, cuda="12.6", cudnn="9.5")
    toolkit = PROGRAMS + "\\v12.4\\bin\\cublas64_12.dll"
    usual = {(x.consumer, x.needed): x for x in probe_dlls(m.host(), SITE, PYTHON, cuda="12.8", frameworks=(paddle,))}
    assert (usual["paddlepaddle-gpu", "cublas64_12.dll"].via, usual["paddlepaddle-gpu", "cublas64_12.dll"].own) == ("loaded", toolkit)
    got = {(x.consumer, x.needed): x for x in probe_dlls(m.host(), SITE, PYTHON, cuda="12.8", frameworks=(paddle,),
                                                        imports=("paddle", "torch"))}
    assert (got["paddlepaddle-gpu", "cublas64_12.dll"].path, got["paddlepaddle-gpu", "cublas64_12.dll"].via) == (toolkit, "PATH")
    lib = got["torch", "cublas64_12.dll"]
    assert (lib.path, lib.via, lib.first_loaded_by, lib.own) == (toolkit, "loaded", "paddlepaddle-gpu", SITE + "\\torch\\lib\\cublas64_12.dll")


def test_onnxruntime_preload_dlls_loads_torchs_or_the_nvidia_wheels_dlls(fake_root):
    """ORT-PRELOAD: a program that calls onnxruntime.preload_dlls() before its first session: with a torch for CUDA 12
    installed (not imported) ONNX Runtime's CUDA DLLs come from torch\\lib, by full path (via preload), so none is
    library-not-found; without torch, from the nvidia wheels' bin folders; with torch imported before the call it loads
    nothing and the provider gets torch's loaded DLLs."""
    m = WindowsMachine(fake_root).torch("2.8.0+cu128").onnxruntime_gpu("1.23.2")
    m.import_order = ("onnxruntime", "onnxruntime.preload_dlls")
    _, found, data = m.findings()
    ort = {x["needed"]: x for x in data["libraries"] if x["consumer"] == "onnxruntime-gpu"}
    assert (ort["cudart64_12.dll"]["path"], ort["cudart64_12.dll"]["via"]) == (SITE + "\\torch\\lib\\cudart64_12.dll", "preload")
    assert not {"library-not-found", "dll-import-order", "dll-two-copies"} & set(found)
    m.import_order = ("torch", "onnxruntime", "onnxruntime.preload_dlls")
    ort = {x["needed"]: x for x in m.findings()[2]["libraries"] if x["consumer"] == "onnxruntime-gpu"}
    assert (ort["cudart64_12.dll"]["via"], ort["cudart64_12.dll"]["first_loaded_by"]) == ("loaded", "torch")
    m.pip_remove("torch")
    m.put(SITE + "\\nvidia\\cuda_runtime\\bin\\cudart64_12.dll")
    m.put(SITE + "\\nvidia\\cudnn\\bin\\cudnn64_9.dll")
    m.import_order = ("onnxruntime", "onnxruntime.preload_dlls")
    _, found, data = m.findings()
    ort = {x["needed"]: x for x in data["libraries"] if x["consumer"] == "onnxruntime-gpu"}
    assert (ort["cudnn64_9.dll"]["path"], ort["cudnn64_9.dll"]["via"]) == (SITE + "\\nvidia\\cudnn\\bin\\cudnn64_9.dll", "preload")
    assert ort["cublas64_12.dll"]["path"] is None and "cublas64_12.dll (onnxruntime-gpu)" in found["library-not-found"]["title"]


def test_the_reports_say_the_stated_import_order(fake_root):
    """The text report's Frameworks checklist and the Markdown report say the order the DLL loads were replayed in,
    only where it was stated."""
    from cudaenv.diagnose.view import build_view
    from cudaenv.render.markdown import render_markdown
    from cudaenv.render.report import render_report

    m = WindowsMachine(fake_root).torch("2.8.0+cu128").onnxruntime_gpu("1.23.2")
    s = m.snapshot()
    assert "import order" not in render_report(s, diagnose(s), build_view(s)).lower()
    m.import_order = ("onnxruntime", "torch")
    s = m.snapshot()
    found = diagnose(s)
    text = " ".join(render_report(s, found, build_view(s)).split())  # the checklist wraps long facts
    assert "import order onnxruntime, torch (as stated: the DLLs are loaded in that order)" in text
    assert "Import order | onnxruntime, torch" in render_markdown(s, found, build_view(s))
    from cudaenv.model.record import replace
    from cudaenv.model.snapshot import Platform

    linux = replace(s, platform=Platform(system="linux"))  # no DLL search there: the order changes nothing, is not said
    assert "import order" not in render_report(linux, found, build_view(linux)).lower()
    assert "Import order" not in render_markdown(linux, found, build_view(linux))


def test_cupy_imported_before_torch_gives_torch_the_toolkits_cublas(fake_root):
    """The real cupy-cuda12x wheel imported before torch (doctor --import-order cupy,torch): its cuBLAS module's
    by-name import loads the CUDA_PATH toolkit's cublas64_12.dll (12.4), and torch's torch_cuda.dll then gets that one,
    not the 12.8 one torch\\lib ships (onnxruntime#24266's failure: "[WinError 127] The specified procedure could not
    be found" where an entry point is newer); dll-two-copies names both. In the usual order CuPy gets torch's."""
    m = WindowsMachine(fake_root).torch("2.8.0+cu128").toolkit("12.4.131", on_path=False)
    cupy = _cupy(m)
    toolkit, shipped = PROGRAMS + "\\v12.4\\bin\\cublas64_12.dll", SITE + "\\torch\\lib\\cublas64_12.dll"
    got = {(x.consumer, x.needed): x for x in probe_dlls(m.host(), SITE, PYTHON, cuda="12.8", frameworks=(cupy,),
                                                        imports=("cupy", "torch"))}
    assert (got["cupy-cuda12x", "cublas64_12.dll"].path, got["cupy-cuda12x", "cublas64_12.dll"].via) == (toolkit, "add_dll_directory")
    lib = got["torch", "cublas64_12.dll"]
    assert (lib.path, lib.via, lib.first_loaded_by, lib.own) == (toolkit, "loaded", "cupy-cuda12x", shipped)
    m.import_order = ("cupy", "torch")
    f = m.findings()[1]["dll-two-copies"]
    assert "torch, imported after cupy-cuda12x, gets that copy: %s" % toolkit in f["detail"]


_CONSUMERS = ["torch", "onnxruntime-gpu", "cupy-cuda12x", "paddlepaddle-gpu"]
_NAMES = ["cudnn64_9.dll", "CUBLAS64_12.dll", "cublas64_12.dll", "cufft64_11.dll"]


def _lib(draw_tuple):
    from cudaenv.model.snapshot import LoadedLibrary

    consumer, name, folder, via = draw_tuple
    return LoadedLibrary(consumer=consumer, object="x.dll", needed=name, path=None if folder is None else "C:\\%s\\%s" % (folder, name),
                         via=via if folder is not None else None)


@given(st.lists(st.tuples(st.sampled_from(_CONSUMERS), st.sampled_from(_NAMES), st.one_of(st.none(), st.sampled_from("abc")),
                          st.sampled_from(["dll-dir", "PATH", "flag-dir"])), max_size=12),
       st.one_of(st.none(), st.lists(st.sampled_from(_CONSUMERS + ["onnxruntime.preload_dlls"]), max_size=5)),
       st.dictionaries(st.sampled_from([n.lower() for n in _NAMES]), st.tuples(st.sampled_from("abc"), st.sampled_from(_CONSUMERS)),
                       max_size=3))
def test_process_loads_keeps_every_load_and_one_module_per_name(specs, order, pre):
    """process_loads, any loads, any order, any full-path loads: every load comes out once (its consumer and name), and
    within the program (the consumers the order names, or all of them) every by-name load of a name gets one file,
    the first loaded, whichever consumer loaded it; a full-path load (flag-dir) keeps its own file."""
    from collections import Counter

    from cudaenv.probes.dlls import process_loads

    libs = [_lib(s) for s in specs]
    preloaded = {k: ("C:\\%s\\%s" % (folder, k), who) for k, (folder, who) in pre.items()}
    out = process_loads(libs, preloaded, lambda p: False, order)
    assert Counter((x.consumer, x.needed) for x in out) == Counter((x.consumer, x.needed) for x in libs)
    assert Counter(x.via for x in out if x.via == "flag-dir") == Counter(x.via for x in libs if x.via == "flag-dir")
    inside = [x for x in out if (order is None or x.consumer in order) and x.via != "flag-dir" and x.path]
    for name in {x.needed.lower() for x in inside}:
        assert len({x.path.lower() for x in inside if x.needed.lower() == name}) == 1, (name, inside)


def test_the_code_searches_each_order_as_its_rows_say():
    """data/dll_search.json's step rows against the orders the resolver builds: each folder step a row says is searched
    (neither ``searched: false`` nor ``modelled: false``) is there in that order, and no other; Python's flags
    (an extension module's imports, ctypes: PY-EXT-LOAD, PY-CTYPES) search neither the current folder nor PATH."""
    from cudaenv.probes.dlls import altered_order, flags_order, search_orders

    rows = [r for r in dll_table()["rows"] if r.get("kind") == "step"]
    system = next(r for r in dll_table()["rows"] if r.get("kind") == "windows-dirs")
    not_folders = ("loaded", "known-dlls")  # the loaded-module list and KnownDLLs come before any folder

    def said(order):
        return [r["step"] for r in rows if r["order"] == order and r["step"] not in not_folders
                and r.get("searched", True) and r.get("modelled", True)]

    def steps(pairs):
        return list(dict.fromkeys(step for _, step in pairs))

    flags = flags_order("C:\\m", "C:\\py", ["C:\\added"], system)
    assert steps(flags) == said("search-flags") == ["dll-dir", "application", "add_dll_directory", "system32"]
    unsearched = {r["step"] for r in rows if r["order"] == "search-flags" and r.get("searched") is False}
    assert unsearched == {"cwd", "PATH"}
    assert steps(altered_order("C:\\m", ["C:\\on-path"], system)) == said("altered")
    assert steps(search_orders("C:\\m", "C:\\py", ["C:\\added"], ["C:\\on-path"], system)[1]) == said("standard")


def test_an_extension_modules_cuda_dll_only_in_the_working_folder_or_on_path_is_not_found(fake_root):
    """The real cupy-cuda12x wheel's modules (.pyd, loaded by Python with LOAD_LIBRARY_SEARCH_DEFAULT_DIRS |
    LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR: PY-EXT-LOAD) with the CUDA DLLs they import only in the program's working folder,
    which is on PATH too (no CUDA_PATH, no nvcc.exe: CuPy adds no folder): none resolves; ONNX Runtime's provider,
    loaded with LOAD_WITH_ALTERED_SEARCH_PATH, finds the same folder's cublas64_12.dll through PATH."""
    m = WindowsMachine(fake_root).onnxruntime_gpu("1.23.2")
    work = "C:\\Users\\me\\project"
    for name in sorted(CUPY12_TOOLKIT_DLLS) + ["cublasLt64_12.dll"]:
        m.put(work + "\\" + name)
    m.path.append(work)
    cupy = _cupy(m)
    ort = Framework(package="onnxruntime-gpu", version="1.23.2", location=SITE, cuda="12", gpu_build=True)
    got = [x for x in probe_dlls(m.host(), None, PYTHON, frameworks=(cupy, ort))]
    mine = {x.needed: x for x in got if x.consumer == "cupy-cuda12x"}
    assert set(mine) == CUPY12_TOOLKIT_DLLS and all(x.path is None and not x.others for x in mine.values()), mine
    theirs = {x.needed: x for x in got if x.consumer == "onnxruntime-gpu"}
    assert (theirs["cublas64_12.dll"].path, theirs["cublas64_12.dll"].via) == (work + "\\cublas64_12.dll", "PATH")


def test_the_cupy_rows_read_the_site_packages_listed_once(fake_root, monkeypatch):
    """Counted work (review): the frameworks job lists the site-packages once and hands the listing to the DLL probe,
    whose CuPy rows (each reading its RECORD) listed the folder again, once a row; probe_dlls called alone lists a
    framework's folder once a run, however many CuPy packages it holds."""
    from cudaenv.probes import frameworks

    m = WindowsMachine(fake_root).cupy("cupy-cuda12x").cupy("cupy-cuda11x")
    listed = calls_to(monkeypatch, frameworks, "_dist_infos")
    _, _, data = m.findings()
    both = {"cupy-cuda11x", "cupy-cuda12x"}
    assert both <= {fw["package"] for fw in data["frameworks"]}
    assert both <= {lib["consumer"] for lib in data["libraries"]}  # each row's RECORD was read through the listing
    assert listed.count(SITE) == 1, listed
    del listed[:]
    cupys = tuple(Framework(package=p, version="13.6.0", location=SITE, gpu_build=True) for p in sorted(both))
    got = probe_dlls(m.host(), None, PYTHON, frameworks=cupys)
    assert {x.consumer for x in got} == both and listed == [SITE], listed
