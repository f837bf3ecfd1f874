"""Inside a container: NVIDIA_DRIVER_CAPABILITIES without compute, and an image whose CUDA needs a newer driver than
the host's injected one (defilantech/LLMKube#1424: a CUDA 13 image on a 12.4 driver), both said to be the host's or
the run command's to fix; and nothing of it outside a container."""

from cudaenv.diagnose import diagnose
from cudaenv.model.record import replace
from cudaenv.diagnose.view import build_view
from cudaenv.render.report import render_report

from machine import healthy


def boxed(env=(), libcuda=(), driver="550.54.15", **platform):
    s = healthy()
    p = replace(s.platform, container="docker", nvidia_visible_devices="all", libcuda=tuple(libcuda), **platform)
    return replace(s, platform=p, env=tuple(env), driver=replace(s.driver, version=driver, kernel_module_version=driver))


def found(s):
    return {f.id: f for f in diagnose(s)}


def test_capabilities_without_compute():
    f = found(boxed(env=(("NVIDIA_DRIVER_CAPABILITIES", "utility"),)))["container-no-compute"]
    assert f.severity == "error" and f.section == "environment" and "NVIDIA_DRIVER_CAPABILITIES=utility" in f.detail
    assert f.fix[0].startswith("docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility")
    for ok in ("compute,utility", "all", " Compute "):
        assert "container-no-compute" not in found(boxed(env=(("NVIDIA_DRIVER_CAPABILITIES", ok),)))


def test_a_cuda_13_image_on_a_12_4_driver_names_the_host():
    s = boxed(env=(("CUDA_VERSION", "13.0.1"),), libcuda=("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",))
    f = found(s)["container-image-needs-newer-driver"]
    assert f.severity == "error" and "The image ships CUDA 13.0 (CUDA_VERSION=13.0.1), which needs driver 580" in f.detail
    assert "the host's driver, injected into this container, is 550.54.15 (CUDA up to 12.4)" in f.detail
    assert "The driver belongs to the host" in f.detail and any("host" in line for line in f.fix)
    assert "container-image-needs-newer-driver" not in found(boxed(env=(("CUDA_VERSION", "12.4.1"),)))


def test_the_injected_libcuda_wins_over_an_unknown_driver():
    s = boxed(env=(("CUDA_VERSION", "13.0.1"),), libcuda=("/usr/lib64/libcuda.so.1", "/usr/lib64/libcuda.so.535.104.05"))
    s = replace(s, driver=None)
    assert "535.104.05" in found(s)["container-image-needs-newer-driver"].detail


def test_nothing_outside_a_container_and_the_checklist_row():
    s = healthy()
    s = replace(s, env=(("CUDA_VERSION", "13.0.1"), ("NVIDIA_DRIVER_CAPABILITIES", "utility")),
                driver=replace(s.driver, version="550.54.15"))
    assert not {"container-no-compute", "container-image-needs-newer-driver"} & set(found(s))
    inside = boxed(env=(("CUDA_VERSION", "12.4.1"), ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")))
    flat = " ".join(render_report(inside, diagnose(inside), build_view(inside)).split())
    assert "NVIDIA_VISIBLE_DEVICES=all, NVIDIA_DRIVER_CAPABILITIES=compute,utility, CUDA_VERSION=12.4.1" in flat
