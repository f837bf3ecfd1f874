"""`doctor --image`'s reader (cudaenv.probes.image) on small real images built in tmp_path (tests/image_builders.py):
docker save tarballs and OCI layout folders with plain and gzip layers, whiteouts, inspect JSON, and what it refuses
(no such path, a blob that is a link, a name that climbs out, a config past the cap, zstd layers, the bytes cap)."""

import json
import os

from image_builders import NVIDIA_CUDA_12_0_CONFIG, VERSION_JSON_11_8, config, docker_save, layer, oci_layout
from cudaenv.probes.image import probe_image

SITE = "usr/local/lib/python3.10/dist-packages/"
TORCH = SITE + "torch-2.5.1+cu124.dist-info/METADATA"


def test_docker_save_with_a_real_nvidia_config_and_gzip_layers(tmp_path):
    layers = [layer({"usr/local/cuda-11.8/version.json": VERSION_JSON_11_8}, gz=True),
              layer({TORCH: b"Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1+cu124\n"})]
    path = docker_save(tmp_path / "img.tar", NVIDIA_CUDA_12_0_CONFIG, layers, tags=("nvidia/cuda:12.0.0-base-ubuntu22.04",))
    f = probe_image(str(path))
    assert (f.kind, f.readable, f.tags) == ("docker-save", True, ("nvidia/cuda:12.0.0-base-ubuntu22.04",))
    assert (f.cuda_version, f.cuda_from, f.compat_package) == ("12.0.0", "CUDA_VERSION", "cuda-compat-12-0")
    assert f.require_cuda.startswith("cuda>=12.0 ") and not f.require_disabled
    assert (f.toolkits, f.torch, f.layers_read, f.notes) == (("11.8.0",), "2.5.1+cu124", 2, ())


def test_whiteouts_remove_what_earlier_layers_had(tmp_path):
    base = layer({TORCH: b"x", "usr/local/cuda-12.4/version.json": VERSION_JSON_11_8, "opt/venv/lib/python3.12/site-packages/torch-2.4.0.dist-info/METADATA": b"x"})
    upper = layer({SITE + ".wh.torch-2.5.1+cu124.dist-info": b"", "usr/local/.wh..wh..opq": b""})
    f = probe_image(str(docker_save(tmp_path / "a.tar", config(["CUDA_VERSION=12.4.1"]), [base, upper])))
    assert (f.torch, f.toolkits) == ("2.4.0", ())  # the venv's torch stays; /usr/local was made opaque
    again = layer({SITE + "torch-2.6.0+cu126.dist-info/METADATA": b"x", "opt/.wh.venv": b""})
    f = probe_image(str(docker_save(tmp_path / "b.tar", config(), [base, upper, again])))
    assert f.torch == "2.6.0+cu126" and f.cuda_version is None


def test_oci_layout_nested_index_and_version_json_as_the_cuda(tmp_path):
    layers = [layer({"./usr/local/cuda-11.8/version.json": VERSION_JSON_11_8}, gz=True)]
    f = probe_image("oci", cwd=str(oci_layout(tmp_path / "oci", config(["A=1"]), layers, nested=True).parent))
    assert (f.kind, f.cuda_version, f.cuda_from, f.layers_read) == ("oci-layout", "11.8.0", "/usr/local/cuda-11.8/version.json", 1)


def test_inspect_json_and_a_bare_config(tmp_path):
    (tmp_path / "i.json").write_text(json.dumps([{"RepoTags": ["r/x:1"], "Config": {"Env": ["CUDA_VERSION=13.0.1", "NVIDIA_DISABLE_REQUIRE=true", "NVIDIA_REQUIRE_CUDA=cuda>=13.0"]}}]))
    f = probe_image(str(tmp_path / "i.json"))
    assert (f.kind, f.tags, f.cuda_version, f.require_disabled, f.require_cuda, f.layers_read) == (
        "inspect-json", ("r/x:1",), "13.0.1", True, "cuda>=13.0", 0)
    (tmp_path / "c.json").write_text(json.dumps(config(["NV_CUDA_CUDART_VERSION=12.8.90-1"])))
    f = probe_image(str(tmp_path / "c.json"))
    assert (f.kind, f.cuda_version, f.cuda_from) == ("config-json", "12.8.90", "NV_CUDA_CUDART_VERSION")


def test_what_is_refused_and_said(tmp_path):
    gone = probe_image("nvidia/cuda:12.4.1-base", cwd=str(tmp_path))
    assert not gone.readable and "never from a registry" in gone.why
    import gzip

    (tmp_path / "img.tar.gz").write_bytes(gzip.compress(docker_save(tmp_path / "plain.tar", config(), []).read_bytes()))
    assert "a compressed file: decompress it first" in probe_image(str(tmp_path / "img.tar.gz")).why
    (tmp_path / "notes.txt").write_text("hello")
    assert "neither a docker save tarball" in probe_image(str(tmp_path / "notes.txt")).why
    oci = oci_layout(tmp_path / "o", config(), [layer({"a": b"1"})])
    blob = next(p for p in (oci / "blobs" / "sha256").iterdir() if p.read_bytes().startswith(b'{"architecture"'))
    blob.rename(tmp_path / "moved")
    os.symlink(tmp_path / "moved", blob)
    f = probe_image(str(oci))
    assert not f.readable and "is a link (not followed)" in f.why
    big = docker_save(tmp_path / "big.tar", config(["PAD=" + "x" * 5000]), [])
    f = probe_image(str(big), limits={"json": 4096})
    assert not f.readable and "larger than 4096 bytes" in f.why


def test_names_that_climb_out_are_not_read_and_caps_are_notes(tmp_path):
    climb = layer({"../../usr/local/cuda-12.4/version.json": VERSION_JSON_11_8, "usr/bin/x": b"12345678"})
    zstd = b"\x28\xb5\x2f\xfd" + b"\x00" * 64
    f = probe_image(str(docker_save(tmp_path / "c.tar", config(), [climb, zstd])))
    assert f.toolkits == () and f.layers_read == 1 and f.notes == ("1/layer.tar: a zstd layer (not read)",)
    many = [layer({"f%d" % i: b"x" * 10}) for i in range(3)]
    f = probe_image(str(docker_save(tmp_path / "m.tar", config(), many)), limits={"bytes": 15, "layers": 2})
    assert f.layers_read == 1 and f.notes == ("layers past 15 bytes not read", "3 layers: only the first 2 read")
    f = probe_image(str(docker_save(tmp_path / "n.tar", config(), [layer({"a": b"", "b": b"", "c": b"", "d": b""})])), limits={"members": 3})
    assert f.readable and f.notes == ("0/layer.tar: more than 3 entries (the rest not read)",)
    from cudaenv.core.i18n import CHINESE, ENGLISH, set_language, tr

    set_language(CHINESE)  # the notes are marked messages (review: made unmarked, they stayed English)
    try:
        said = tr(f.notes[0])
    finally:
        set_language(ENGLISH)
    assert said == "0/layer.tar：条目超过 3 个（其余没有读取）", said


def test_an_image_the_local_engine_holds_through_its_inspect(fake_root, fake_bin, tmp_path):
    """No such path: `docker image inspect -- REF` (a fake docker printing the inspect form of the recorded nvidia/cuda
    config: constructed), never a pull; a refusal (not in the docker group) is said; a ref that could be a flag or
    shell syntax is never passed."""
    inspect = json.dumps([{"RepoTags": ["nvidia/cuda:12.0.0-base-ubuntu22.04"], "Config": NVIDIA_CUDA_12_0_CONFIG["config"]}])
    fake_bin.command("docker", stdout="", exit_code=1, by_args={"image inspect -- nvidia/cuda:12.0.0-base-ubuntu22.04": (inspect, 0)})
    host = fake_root.host(path=fake_bin.env_path)
    f = probe_image("nvidia/cuda:12.0.0-base-ubuntu22.04", cwd=str(tmp_path), host=host)
    assert (f.kind, f.tags, f.cuda_version, f.layers_read) == ("engine-inspect", ("nvidia/cuda:12.0.0-base-ubuntu22.04",), "12.0.0", 0)
    fake_bin.command("docker", stdout="", exit_code=1, stderr="permission denied while trying to connect to the Docker daemon socket")
    f = probe_image("vllm/vllm-openai:latest", cwd=str(tmp_path), host=host)
    assert not f.readable and "docker image inspect: permission denied while trying to connect" in f.why
    f = probe_image("--help;rm", cwd=str(tmp_path), host=host)
    assert not f.readable and "docker image inspect" not in f.why
