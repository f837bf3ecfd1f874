"""`doctor --image`'s rules (cudaenv.diagnose.image, pure) on hand-built snapshots: the runtime's NVIDIA_REQUIRE_CUDA
check against the driver's own CUDA (SyneRBI/PETRIC2#27: cuda>=12.8 refused on driver 551.78, CUDA 12.4), its
forward-compatibility branches, CUDA_VERSION and torch's CUDA by minor-version compatibility, and the checklist row;
then `cudaenv doctor --image` end to end on a fake machine with a docker save tarball."""

from builders import recorded
from image_builders import NVIDIA_CUDA_12_0_CONFIG, config, docker_save, layer
from machine import a10g_535, healthy
from cudaenv.diagnose import image as rules
from cudaenv.diagnose.view import build_view
from cudaenv.model.record import replace
from cudaenv.model.reports import ImageFacts
from cudaenv.parse.image import parse_image_config
from cudaenv.render.markdown import render_markdown
from cudaenv.render.report import render_report

REAL_ENV = parse_image_config(recorded("image-config-nvidia-cuda-12.0.0-base.json"))[0]
NVIDIA_12_0 = ImageFacts("cuda.tar", "docker-save", tags=("nvidia/cuda:12.0.0-base-ubuntu22.04",), cuda_version="12.0.0",
                         cuda_from="CUDA_VERSION", require_cuda=REAL_ENV["NVIDIA_REQUIRE_CUDA"], compat_package="cuda-compat-12-0")


def on(driver, cuda):
    s = healthy()
    return replace(s, driver=replace(s.driver, version=driver, cuda_version=cuda, kernel_module_version=driver))


def ids(s, image):
    return {f.id: f for f in rules.check(s, image)}


def test_a_machine_whose_driver_runs_the_image_gets_no_finding_and_an_ok_row():
    s = on("580.95.05", "13.0")
    assert ids(s, NVIDIA_12_0) == {}
    flat = " ".join(render_report(s, (), build_view(s, image=NVIDIA_12_0)).split())
    assert "Containers ok image nvidia/cuda:12.0.0-base-ubuntu22.04: CUDA 12.0.0, requires cuda>=12.0; needs driver >= 525.60.13" in flat


def test_the_runtime_refuses_a_newer_require_even_where_minor_compat_would_run_it():
    image = ImageFacts("x.json", "inspect-json", tags=("ghcr.io/synerbi/sirf:petric2",), cuda_version="12.8.1",
                       require_cuda="cuda>=12.8")
    f = ids(on("551.78", "12.4"), image)["image-needs-newer-driver"]
    assert f.severity == "error" and f.section == "containers"
    assert f.title == "the image ghcr.io/synerbi/sirf:petric2 needs driver 570.26 or newer; this machine has 551.78"
    assert "NVIDIA_REQUIRE_CUDA (cuda>=12.8) needs driver 570.26 or newer; this machine has 551.78 (CUDA 12.4)" in f.detail
    assert "unsatisfied condition: cuda>=12.8" in f.detail and "minor-version compatibility (from 525.60.13)" in f.detail
    assert "docker run --gpus all -e NVIDIA_DISABLE_REQUIRE=true ghcr.io/synerbi/sirf:petric2" in f.fix[-2]
    assert f.fix[-1] == "# or an image built for CUDA 12.4 or older (a tag such as nvidia/cuda:12.4.*)"
    assert any("570.26" in line for line in f.fix[:-2])  # the driver upgrade, this distro's command


def test_the_drivers_own_cuda_decides_the_runtimes_check():
    """nvidia-smi's CUDA Version is what the runtime compares; the driver's number only where that is not known."""
    image = ImageFacts("x.json", "inspect-json", require_cuda="cuda>=12.8")
    assert rules.image_verdict(rules.image_need(image), "570.26", "12.4") == "needs-newer-driver"
    assert rules.image_verdict(rules.image_need(image), "570.26", None) == "runs"
    assert rules.image_verdict(rules.image_need(image), "550.54.14", "12.8") == "runs"


def test_forward_compatibility_branches_and_no_skip_where_minor_compat_fails():
    f = ids(on("470.82.01", "11.4"), NVIDIA_12_0)["image-forward-compat"]
    assert f.severity == "warning" and "driver branch 470 for the GPU brands it lists (tesla, unknown, nvidia" in f.detail
    assert "(cuda-compat-12-0)" in f.detail and "data-center GPUs only" in f.detail
    thirteen = replace(NVIDIA_12_0, cuda_version="13.0.1", require_cuda="cuda>=13.0")
    n = ids(on("470.82.01", "11.4"), thirteen)["image-needs-newer-driver"]
    assert not any("NVIDIA_DISABLE_REQUIRE" in line for line in n.fix) and "minor-version" not in n.detail


def test_without_the_runtime_check_the_cuda_and_torch_floors():
    disabled = replace(NVIDIA_12_0, require_disabled=True, cuda_version="12.4.1")
    assert ids(on("551.78", "12.4"), disabled) == {}  # 12.4 runs on 525+ by minor-version compatibility
    torch = ImageFacts("t.tar", "docker-save", torch="2.8.0+cu128", layers_read=3)
    f = ids(on("520.61.05", "11.8"), torch)["image-needs-newer-driver"]
    assert "The image's torch built for CUDA 12.8 needs driver 525.60.13 or newer" in f.detail
    assert "CUDA driver version is insufficient" in f.detail
    assert rules.image_need(torch)["why"] == "torch" and rules.image_need(NVIDIA_12_0)["branches"][0] == ("450", ("tesla",))


def test_no_driver_no_cuda_and_unreadable():
    s = healthy(driver=None)
    assert ids(s, NVIDIA_12_0)["image-no-driver"].title == (
        "the image nvidia/cuda:12.0.0-base-ubuntu22.04 needs driver 525.60.13 or newer; this machine's is not known")
    bare = ImageFacts("b.json", "config-json")
    assert "its layers were not read" in ids(healthy(), bare)["image-no-cuda"].detail
    bad = ids(healthy(), ImageFacts("nope", "unknown", readable=False, why="no such file"))["image-unreadable"]
    assert bad.severity == "error" and "no such file" in bad.detail and bad.fix[0].startswith("docker save IMAGE -o image.tar")
    s = healthy()
    md = render_markdown(s, (), build_view(s, image=ImageFacts("nope", "unknown", readable=False)))
    assert "| Image | nope: not read |" in md


def test_doctor_image_end_to_end(machine, tmp_path):
    """A 535 driver (CUDA 12.2, recorded nvidia-smi of an A10G) against a CUDA 13 image with torch in a gzip layer."""
    a10g_535(machine)
    new = docker_save(tmp_path / "new.tar", config(["CUDA_VERSION=13.0.1", "NVIDIA_REQUIRE_CUDA=cuda>=13.0"]),
                      [layer({"usr/lib/python3/dist-packages/torch-2.9.0+cu130.dist-info/METADATA": b"x"}, gz=True)],
                      tags=("vllm/vllm-openai:v0.11.0",))
    code, found, data = machine.findings("--quick", "--image", str(new))
    assert data["image"]["torch"] == "2.9.0+cu130" and data["image"]["tags"] == ["vllm/vllm-openai:v0.11.0"]
    assert list(data)[-1] == "image" and code == 1
    assert found["image-needs-newer-driver"]["title"] == (
        "the image vllm/vllm-openai:v0.11.0 needs driver 580.65.06 or newer; this machine has 535.247.01")
    ok = docker_save(tmp_path / "ok.tar", NVIDIA_CUDA_12_0_CONFIG, [])
    text = machine.doctor("--quick", "--image", str(ok), fmt=None).out
    assert "\nContainers\n" in text and "ok image example/cuda:test: CUDA 12.0.0, requires cuda>=12.0; needs driver >= 525.60.13" in " ".join(text.split())
    md = machine.doctor("--quick", "--image", str(ok), fmt="--format=markdown").out
    assert "| Image | example/cuda:test: CUDA 12.0.0, requires cuda\\>=12.0; needs driver \\>= 525.60.13 |" in md
    code, found, data = machine.findings("--quick", "--image", str(tmp_path / "missing.tar"))
    assert code == 1 and found["image-unreadable"]["severity"] == "error" and data["image"]["readable"] is False
    assert "image" not in machine.findings("--quick")[2]
