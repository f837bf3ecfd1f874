"""The other CUDA consumers read from site-packages without importing them (probes/frameworks.py): each package's
version, the CUDA its files say it was built for and from where, CPU builds, and the nvidia wheels it requires."""

from framework_builders import ORT_BUILD_INFO, dist, tensorflow
from cudaenv.host import Host
from cudaenv.probes.frameworks import probe_frameworks


def _read(*sites):
    notes = []
    found = probe_frameworks(Host(env={}), [str(s) for s in sites], notes)
    return {f.package: f for f in found}, notes


def test_each_source_of_the_cuda_build(tmp_path):
    site = tmp_path / "lib" / "python3.12" / "site-packages"
    tensorflow(site)
    dist(site, "onnxruntime-gpu", "1.23.2", files={"onnxruntime/capi/build_and_package_info.py": ORT_BUILD_INFO % ("1.23.2", "12.2")})
    dist(site, "cupy-cuda12x", "13.6.0")
    dist(site, "vllm", "0.11.0+cu130")
    dist(site, "flash_attn", "2.8.3", requires=["torch", "einops"])
    dist(site, "xformers", "0.0.32", requires=["nvidia-cudnn-cu12", "torch"])
    dist(site, "nvidia-cudnn-cu12", "9.10.2.21")
    dist(site, "requests", "2.32.0")
    found, notes = _read(site)
    assert list(found) == ["tensorflow", "onnxruntime-gpu", "cupy-cuda12x", "vllm", "flash-attn", "xformers"]  # the table's order
    tf = found["tensorflow"]
    assert (tf.version, tf.cuda, tf.cudnn, tf.cuda_from, tf.gpu_build) == ("2.20.0", "12.5.1", "9", "build-info", True)
    assert tf.nvidia_requires == ("nvidia-cublas-cu12", "nvidia-cudnn-cu12")
    assert (found["onnxruntime-gpu"].cuda, found["onnxruntime-gpu"].cudnn) == ("12.2", "9")
    assert (found["cupy-cuda12x"].cuda, found["cupy-cuda12x"].cuda_from) == ("12", "name")
    assert (found["vllm"].cuda, found["vllm"].cuda_from) == ("13.0", "local-tag")
    assert (found["xformers"].cuda, found["xformers"].cuda_from) == ("12", "requires")  # nvidia-cudnn-cu12 is installed
    fa = found["flash-attn"]
    assert fa.cuda is None and fa.gpu_build is None  # nothing said it: not guessed
    assert notes == []


def test_cpu_builds(tmp_path):
    site = tmp_path / "site-packages"
    tensorflow(site, cuda="", cudnn="", cuda_build=False, and_cuda=False)
    dist(site, "onnxruntime", "1.23.2")
    dist(site, "jax", "0.8.1")
    dist(site, "jaxlib", "0.8.1")
    dist(site, "torchvision", "0.24.0+cpu", files={"torchvision/version.py": "__version__ = '0.24.0+cpu'\ncuda = None\n"})
    found, _ = _read(site)
    assert {p: f.gpu_build for p, f in found.items()} == {
        "tensorflow": False, "onnxruntime": False, "jax": False, "jaxlib": None, "torchvision": False}


def test_jax_takes_its_plugins_major_and_the_first_site_packages_wins(tmp_path):
    user, venv = tmp_path / "user" / "site-packages", tmp_path / "venv" / "site-packages"
    dist(venv, "jax", "0.8.1")
    dist(venv, "jax-cuda13-plugin", "0.8.1")
    dist(venv, "jax-cuda13-pjrt", "0.8.1")
    dist(user, "cupy-cuda11x", "12.3.0")
    dist(venv, "cupy-cuda11x", "13.6.0")
    found, _ = _read(user, venv)
    assert (found["jax"].cuda, found["jax"].gpu_build) == ("13", True)
    assert found["cupy-cuda11x"].version == "12.3.0" and found["cupy-cuda11x"].location == str(user)


def test_a_jaxlib_cuda_wheel_before_the_plugins_is_a_cuda_build_with_its_cudnn(tmp_path):
    """jaxlib was itself the CUDA build before the jax-cudaNN-plugin packages (jax-ml/jax#20519, #18027: jax 0.4.25 with
    jaxlib 0.4.25+cuda12.cudnn89): its tag says CUDA 12 and cuDNN 8.9, and jax without a plugin is not a CPU build."""
    site = tmp_path / "site-packages"
    dist(site, "jax", "0.4.25")
    dist(site, "jaxlib", "0.4.25+cuda12.cudnn89")
    found, _ = _read(site)
    jaxlib = found["jaxlib"]
    assert (jaxlib.cuda, jaxlib.cudnn, jaxlib.cuda_from, jaxlib.gpu_build) == ("12", "8.9", "local-tag", True)
    assert found["jax"].gpu_build is None and found["jax"].cuda is None  # not a CPU build; jaxlib's row says the CUDA
    plain = tmp_path / "plain"
    dist(plain, "jax", "0.4.25")
    dist(plain, "jaxlib", "0.4.25")  # the CPU jaxlib of the same release
    found, _ = _read(plain)
    assert found["jax"].gpu_build is False and found["jaxlib"].cudnn is None


def test_hostile_files_are_read_bounded_and_checked(tmp_path):
    site = tmp_path / "site-packages"
    folder = dist(site, "tensorflow", "2.20.0", files={"tensorflow/python/platform/build_info.py": "cuda_version = '`reboot`'\n" * 5000})
    (folder / "RECORD").write_text("../../../../etc/passwd.so,,\n" + "a.so,,\n" * 100000)
    found, _ = _read(site)
    tf = found["tensorflow"]
    assert tf.cuda is None and tf.libraries == ()


def test_the_cuda_major_from_a_shipped_librarys_needed_entries(tmp_path):
    """flash-attn's metadata says nothing of CUDA; its compiled extension (built here, NEEDED on a libcudart.so.12
    stand-in) does."""
    from elf_builders import build_library

    from cudaenv.probes.elf import probe_needed

    site = tmp_path / "site-packages"
    cudart = build_library(tmp_path / "nvidia" / "cuda_runtime" / "lib", "libcudart.so.12", soname="libcudart.so.12")
    ext = build_library(tmp_path / "build", "flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so", links=[cudart])
    dist(site, "flash_attn", "2.8.3", requires=["torch"], binary={"flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so": ext.read_bytes()})
    host = Host(env={})
    found = {f.package: f for f in probe_frameworks(host, [str(site)], [], None, lambda p: probe_needed(host, p))}
    fa = found["flash-attn"]
    assert fa.libraries == ("flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so",)
    assert fa.needed == ("libcudart.so.12",) and (fa.cuda, fa.cuda_from, fa.gpu_build) == ("12", "needed", True)
    assert probe_needed(host, str(site / "missing.so")) == () and probe_needed(host, str(tmp_path)) == ()
