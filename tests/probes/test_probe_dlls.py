"""torch's CUDA DLLs resolved as Windows does (probes/dlls.py, data/dll_search.json) on a fake Windows root: a conda
environment whose torch\\lib\\torch_cuda.dll (a constructed PE file: tests/pe_builders.py) imports cudart, cuBLAS,
cuDNN, NVRTC and cuFFT; torch's first search (its own folder, python.exe's folder, the os.add_dll_directory folders,
System32: never PATH), its PATH fallback where a CUDA toolkit's bin supplies what the wheel lacks, names matched
without regard to case, and the findings: library-not-found in Windows words."""

from pe_builders import build_pe
from cudaenv.diagnose import diagnose
from cudaenv.model.snapshot import Platform
from cudaenv.probes.dlls import probe_dlls, resolve_dll, search_orders

from machine import healthy

ENV = "C:\\conda\\envs\\gpu"
SITE = ENV + "\\Lib\\site-packages"
TOOLKIT = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.4\\bin"
IMPORTS = ["c10.dll", "cudart64_12.dll", "cublas64_12.dll", "cudnn64_9.dll", "nvrtc64_120_0.dll", "cufft64_11.dll",
           "KERNEL32.dll"]


def _tree(fake_root):
    def put(path, data=b"MZ"):
        target = fake_root.path / path.replace("C:\\", "C/").replace("\\", "/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    put(SITE + "\\torch\\lib\\torch_cuda.dll", build_pe(IMPORTS, ["nvcuda.dll"]))
    put(SITE + "\\torch\\lib\\cudart64_12.dll")
    put(SITE + "\\torch\\lib\\CUBLAS64_12.DLL")  # Windows matches names without regard to case
    put(ENV + "\\Library\\bin\\cudnn64_9.dll")  # conda's cuDNN, through torch's os.add_dll_directory
    put(ENV + "\\python.exe")
    put(TOOLKIT + "\\cudart64_12.dll")
    put(TOOLKIT + "\\nvrtc64_120_0.dll")
    put("C:\\Windows\\System32\\nvcuda.dll")
    return fake_root.host(system="windows", env={"PATH": TOOLKIT + ";C:\\Windows\\System32"})


def test_torchs_first_search_then_its_path_fallback(fake_root):
    host = _tree(fake_root)
    found = {x.needed: x for x in probe_dlls(host, SITE, ENV + "\\python.exe")}
    assert set(found) == {"cudart64_12.dll", "cublas64_12.dll", "cudnn64_9.dll", "nvrtc64_120_0.dll", "cufft64_11.dll"}
    cudart = found["cudart64_12.dll"]
    assert (cudart.path, cudart.via, cudart.from_wheel) == (SITE + "\\torch\\lib\\cudart64_12.dll", "dll-dir", True)
    assert cudart.others == (TOOLKIT + "\\cudart64_12.dll",)  # the toolkit on PATH does not shadow: PATH is not searched first
    assert found["cublas64_12.dll"].path == SITE + "\\torch\\lib\\CUBLAS64_12.DLL"
    assert (found["cudnn64_9.dll"].path, found["cudnn64_9.dll"].via) == (ENV + "\\Library\\bin\\cudnn64_9.dll", "add_dll_directory")
    nvrtc = found["nvrtc64_120_0.dll"]
    assert (nvrtc.path, nvrtc.via, nvrtc.from_wheel) == (TOOLKIT + "\\nvrtc64_120_0.dll", "PATH", False)
    assert found["cufft64_11.dll"].path is None
    s = healthy(platform=Platform(system="windows"), libraries=tuple(found.values()))
    f = {x.id: x for x in diagnose(s)}
    lost = f["library-not-found"]
    assert lost.title == "CUDA libraries the loader finds nowhere: cufft64_11.dll (torch)"
    assert "[WinError 126] The specified module could not be found" in lost.detail and "RUNPATH" not in lost.detail
    assert lost.fix[-1].endswith("put its bin folder on PATH")
    assert "library-shadowed" not in f


def test_the_pure_resolver_and_the_two_orders():
    first, fallback = search_orders("C:\\e\\torch\\lib", "C:\\e", ["C:\\e\\torch\\lib", "C:\\e\\Library\\bin"], ["C:\\tk\\bin"],
                                    {"system32": "C:\\W\\System32", "system": "C:\\W\\System", "windows": "C:\\W"})
    assert [s for _, s in first] == ["dll-dir", "application", "add_dll_directory", "add_dll_directory", "system32"]
    assert "PATH" not in [s for _, s in first] and fallback[-1] == ("C:\\tk\\bin", "PATH")
    listings = {"C:\\e\\torch\\lib": {"a.dll": "A.dll"}, "C:\\tk\\bin": {"a.dll": "a.dll", "b.dll": "b.dll"}}

    def listing(folder):
        return listings.get(folder, {})

    def join(a, b):
        return a + "\\" + b

    assert resolve_dll("a.DLL", first + fallback, listing, join) == ("C:\\e\\torch\\lib\\A.dll", "dll-dir", ("C:\\tk\\bin\\a.dll",))
    assert resolve_dll("b.dll", first, listing, join) == (None, None, ())
    assert resolve_dll("b.dll", fallback, listing, join)[1] == "PATH"


def test_a_torch_without_cuda_dlls_and_a_broken_dll(fake_root):
    broken = fake_root.path / "C/e/Lib/site-packages/torch/lib/torch_cuda.dll"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"MZ not a PE file")
    host = fake_root.host(system="windows", env={})
    assert probe_dlls(host, "C:\\e\\Lib\\site-packages", "C:\\e\\python.exe") == ()
    assert probe_dlls(host, "C:\\nowhere\\Lib\\site-packages", None) == ()


def test_the_collector_resolves_torchs_dlls_on_windows_only(fake_root):
    """collect.py's frameworks step on a Windows host: torch's DLLs from its site-packages and interpreter (the torch
    record the static probe gives); a torch the probe did not find installed gives none."""
    from cudaenv.model.snapshot import Torch
    from cudaenv.probes.collect import _windows_dlls

    host = _tree(fake_root)
    torch = Torch(python=ENV + "\\python.exe", installed=True, version="2.8.0+cu128", cuda="12.8", location=SITE)
    got = _windows_dlls(host, [], torch)
    assert {x.needed for x in got} >= {"cudart64_12.dll", "cufft64_11.dll"} and all(x.consumer == "torch" for x in got)
    assert _windows_dlls(host, [], Torch(python=ENV + "\\python.exe", installed=False)) == ()
