"""TensorFlow's last GPU builds on native Windows (issue 29): TensorFlow 2.10.1's Windows wheel (tests/recorded/
wheel-tensorflow-2.10.1-win_amd64.txt) is a CUDA 11.2, cuDNN 8 build whose Python extension links no CUDA DLL; TSL's
loader opens cudart64_110.dll ... cudnn64_8.dll by name at run time, in the standard search order (python.exe's folder,
System32, the Windows folders, PATH: data/dll_search.json's tensorflow consumer row). On the Windows model machine
(tests/windows_machine.py): the DLLs TensorFlow's documented conda line installs in the environment's Library\\bin (on
PATH), none of them, and TensorFlow imported before torch or CuPy in one process (``doctor --import-order``), where
Windows gives the later import the DLL of that name TensorFlow loaded first."""

from cudaenv.model.snapshot import Framework
from cudaenv.probes.dlls import probe_dlls
from windows_machine import ENV, PYTHON, SITE, WindowsMachine

TF_DLLS = ("cudart64_110.dll", "cublas64_11.dll", "cublasLt64_11.dll", "cufft64_10.dll", "curand64_10.dll",
           "cusolver64_11.dll", "cusparse64_11.dll", "cudnn64_8.dll")
LIBRARY_BIN = ENV + "\\Library\\bin"  # conda's cudatoolkit=11.2 cudnn=8.1.0 put their DLLs there; activation puts it on PATH
# torch 2.x+cu118 for Windows: the CUDA 11 DLLs torch_cuda.dll imports, shipped in torch\lib (TORCH-LOAD-DLL)
TORCH118 = ["c10.dll", "c10_cuda.dll", "cudart64_110.dll", "cublas64_11.dll", "cublasLt64_11.dll", "cudnn64_8.dll",
            "cufft64_10.dll", "curand64_10.dll", "cusparse64_11.dll", "KERNEL32.dll"]


def _conda_cuda(m):
    for name in TF_DLLS:
        m.put(LIBRARY_BIN + "\\" + name)
    return m


def _tf(found):
    return next(f for f in found if f["package"] == "tensorflow")


def test_the_windows_build_reads_as_cuda_11_2_and_finds_its_dlls_through_path(fake_root):
    m = _conda_cuda(WindowsMachine(fake_root).tensorflow())
    _, found, data = m.findings()
    tf = _tf(data["frameworks"])
    assert (tf["version"], tf["cuda"], tf["cudnn"], tf["gpu_build"]) == ("2.10.1", "11.2", "8", True), tf
    got = {x["needed"]: x for x in data["libraries"] if x["consumer"] == "tensorflow"}
    assert set(got) == set(TF_DLLS)
    assert {(x["path"], x["via"], x["loaded_by"]) for x in got.values()} == {
        (LIBRARY_BIN + "\\" + n, "PATH", "dlopen") for n in TF_DLLS}
    assert got["cudnn64_8.dll"]["object"] == SITE + "\\tensorflow\\python\\_pywrap_tensorflow_internal.pyd"
    assert not {"library-not-found", "framework-cpu-build", "framework-no-gpu-by-design"} & set(found), found.keys()


def test_without_the_cuda_dlls_tensorflow_says_its_own_failure_and_its_documented_fix(fake_root):
    m = WindowsMachine(fake_root).tensorflow()
    _, found, _ = m.findings()
    f = found["library-not-found"]
    assert "cudart64_110.dll (tensorflow)" in f["title"] and "cudnn64_8.dll (tensorflow)" in f["title"], f["title"]
    assert "Cannot dlopen some GPU libraries" in f["detail"] and "not in python.exe's folder" in f["detail"], f["detail"]
    assert f["fix"][0] == "conda install -c conda-forge cudatoolkit=11.2 cudnn=8.1.0", f["fix"]


def test_a_build_of_another_cuda_is_not_resolved_with_the_11_2_names(fake_root):
    """The row's DLL names are the CUDA 11.2 builds' (TensorFlow 2.5 to 2.10): another build's are not guessed."""
    m = WindowsMachine(fake_root).tensorflow()
    tf = Framework(package="tensorflow", version="2.4.0", location=SITE, cuda="11.0", cudnn="8", gpu_build=True)
    assert probe_dlls(m.host(), None, PYTHON, frameworks=(tf,)) == ()
    assert {x.needed for x in probe_dlls(m.host(), None, PYTHON, frameworks=(Framework(
        package="tensorflow", version="2.10.1", location=SITE, cuda="11.2", cudnn="8", gpu_build=True),))} == set(TF_DLLS)


def test_tensorflow_imported_before_torch_gives_torch_its_cudnn(fake_root):
    """torch 2.x+cu118 ships cudnn64_8.dll (and cuDNN 8's release it was built with) in torch\\lib; TensorFlow
    imported first has loaded conda's cudnn64_8.dll by name, and Windows gives torch_cuda.dll's import of that name the
    module already loaded (MS-ORDER, ORT-24266): two cuDNN 8 files in play, torch on TensorFlow's. Imported the usual
    way (torch first), TensorFlow's by-name loads get torch's files instead."""
    m = _conda_cuda(WindowsMachine(fake_root).torch("2.7.1+cu118", bundled=[d for d in TORCH118 if d.startswith("cu")],
                                                     imports=TORCH118).tensorflow())
    m.import_order = ("tensorflow", "torch")
    _, found, data = m.findings()
    torch_cudnn = next(x for x in data["libraries"] if x["consumer"] == "torch" and x["needed"] == "cudnn64_8.dll")
    assert (torch_cudnn["path"], torch_cudnn["via"], torch_cudnn["first_loaded_by"]) == (
        LIBRARY_BIN + "\\cudnn64_8.dll", "loaded", "tensorflow"), torch_cudnn
    assert torch_cudnn["own"] == SITE + "\\torch\\lib\\cudnn64_8.dll"
    f = found["dll-two-copies"]
    assert "cudnn64_8.dll" in f["title"] and "torch, imported after tensorflow, gets that copy" in f["detail"], f
    m.import_order = ()  # the usual program: torch first
    _, found, data = m.findings()
    tf_cudnn = next(x for x in data["libraries"] if x["consumer"] == "tensorflow" and x["needed"] == "cudnn64_8.dll")
    assert (tf_cudnn["path"], tf_cudnn["via"], tf_cudnn["first_loaded_by"]) == (
        SITE + "\\torch\\lib\\cudnn64_8.dll", "loaded", "torch"), tf_cudnn


def test_cupy_imported_after_tensorflow_loads_its_cuda_dlls_only_through_it(fake_root):
    """CuPy for CUDA 11 (the real cupy-cuda11x 13.6.0 wheel's modules) with no CUDA_PATH and no nvcc.exe on PATH adds no
    CUDA folder, and Python's flags never search PATH: in a program that imports TensorFlow first, its cuBLAS, cuFFT
    ... are the ones TensorFlow loaded from PATH, and only NVRTC, which TensorFlow does not load, is missing; imported
    first, CuPy finds none of them."""
    m = _conda_cuda(WindowsMachine(fake_root).tensorflow()).cupy("cupy-cuda11x")
    m.import_order = ("tensorflow", "cupy")
    _, found, data = m.findings()
    cublas = next(x for x in data["libraries"] if x["consumer"] == "cupy-cuda11x" and x["needed"] == "cublas64_11.dll")
    assert (cublas["path"], cublas["via"], cublas["first_loaded_by"], cublas["own"]) == (
        LIBRARY_BIN + "\\cublas64_11.dll", "loaded", "tensorflow", None), cublas
    title = found["library-not-found"]["title"]
    assert "nvrtc64_112_0.dll (cupy-cuda11x)" in title and "cublas64_11.dll" not in title, title
    m.import_order = ("cupy", "tensorflow")
    _, found, _ = m.findings()
    assert "cublas64_11.dll (cupy-cuda11x)" in found["library-not-found"]["title"]
