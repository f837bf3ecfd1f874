"""A container image's files read without running it (cudaenv.parse.image): configs in their three forms, docker
save's and OCI's manifests, NVIDIA_REQUIRE_CUDA as NVIDIA's images set it, layer paths and whiteouts."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import assert_linear, recorded
from cudaenv.parse import image as p

REAL = recorded("image-config-nvidia-cuda-12.0.0-base.json")


def test_a_real_nvidia_cuda_config():
    env, labels, tags = p.parse_image_config(REAL)
    assert env["CUDA_VERSION"] == "12.0.0" and env["NV_CUDA_COMPAT_PACKAGE"] == "cuda-compat-12-0"
    assert env["NVIDIA_REQUIRE_CUDA"].startswith("cuda>=12.0 brand=tesla,driver>=450,driver<451 ")
    assert labels == {"maintainer": "NVIDIA CORPORATION <cudatools@nvidia.com>"} and tags == ()


def test_inspect_output_and_later_keys_win():
    inspect = json.dumps([{"RepoTags": ["nvidia/cuda:12.4.1-base-ubuntu22.04"],
                           "Config": {"Env": ["A=1", "CUDA_VERSION=12.4.1", "A=2", "junk", 7], "Labels": None}}])
    env, labels, tags = p.parse_image_config(inspect.encode())
    assert env == {"A": "2", "CUDA_VERSION": "12.4.1"} and labels == {} and tags == ("nvidia/cuda:12.4.1-base-ubuntu22.04",)
    assert p.parse_image_config("[]") is None and p.parse_image_config('{"config": 3}') is None
    assert p.parse_image_config(b"{" * 10) is None


def test_require_cuda_alternatives_and_forward_compat_branches():
    env = p.parse_image_config(REAL)[0]
    cuda, alts = p.parse_require_cuda(env["NVIDIA_REQUIRE_CUDA"])
    assert cuda == "12.0" and alts[0] == (("cuda", ">=", "12.0"),)
    assert alts[1] == (("brand", "=", "tesla"), ("driver", ">=", "450"), ("driver", "<", "451"))
    branches = dict(p.driver_branches(alts))
    assert list(branches) == ["450", "470", "510", "515", "520"] and branches["450"] == ("tesla",)
    assert branches["470"][:3] == ("tesla", "unknown", "nvidia") and len(branches["470"]) == 10
    assert p.parse_require_cuda("cuda>=13.0") == ("13.0", ((("cuda", ">=", "13.0"),),))
    assert p.parse_require_cuda(None) == (None, ()) and p.parse_require_cuda("arch=x86_64") == (None, ((("arch", "=", "x86_64"),),))


def test_manifests_and_digests():
    save = json.dumps([{"Config": "abc.json", "RepoTags": ["x:1"], "Layers": ["0/layer.tar", 5]}])
    assert p.parse_save_manifest(save) == ("abc.json", ("0/layer.tar",), ("x:1",))
    hexd = "a" * 64
    assert p.digest_hex("sha256:" + hexd) == hexd and p.digest_hex("sha256:../../etc") is None and p.digest_hex(None) is None
    assert p.parse_oci_index(json.dumps({"manifests": [{"digest": "sha256:" + hexd}, {"digest": "md5:x"}]})) == (hexd,)
    man = {"config": {"digest": "sha256:" + "b" * 64}, "layers": [{"digest": "sha256:" + hexd, "mediaType": "m"}, {}]}
    assert p.parse_oci_manifest(json.dumps(man)) == ("b" * 64, ((hexd, "m"),))
    assert p.parse_oci_manifest(json.dumps({"manifests": []})) is None


def test_layer_paths_whiteouts_and_names():
    assert p.layer_path("./usr//local/cuda/") == "usr/local/cuda" and p.layer_path("../etc/passwd") is None
    assert p.layer_path("a/../../b") is None and p.layer_path("") is None
    assert p.whiteout("usr/lib/python3/site-packages/.wh.torch-2.5.1.dist-info") == (
        "delete", "usr/lib/python3/site-packages/torch-2.5.1.dist-info")
    assert p.whiteout("opt/.wh..wh..opq") == ("opaque", "opt") and p.whiteout(".wh.x") == ("delete", "x")
    assert p.whiteout("usr/bin/python") is None
    assert p.torch_dist_version("usr/lib/python3.12/site-packages/torch-2.5.1+cu124.dist-info/METADATA") == "2.5.1+cu124"
    assert p.torch_dist_version("x/torchvision-0.20.1.dist-info/METADATA") is None
    assert p.toolkit_version_json("usr/local/cuda-12.4/version.json") and p.toolkit_version_json("usr/local/cuda/version.json")
    assert not p.toolkit_version_json("usr/local/cuda-12.4/lib64/version.json")


@settings(max_examples=150)
@given(st.one_of(st.text(), st.binary()))
def test_any_input_never_raises(data):
    assert p.parse_image_config(data) is None or len(p.parse_image_config(data)) == 3
    assert isinstance(p.parse_require_cuda(data)[1], tuple)
    assert isinstance(p.parse_oci_index(data), tuple)
    p.parse_save_manifest(data), p.parse_oci_manifest(data)
    if isinstance(data, str):
        path = p.layer_path(data)
        assert path is None or ".." not in path.split("/")
        if path:
            p.whiteout(path), p.torch_dist_version(path)


@pytest.mark.parametrize("parse, unit", [
    (p.parse_require_cuda, "brand=tesla,driver>=470,driver<471 "),
    (lambda t: p.driver_branches(p.parse_require_cuda(t)[1]), "brand=geforce,driver>=535,driver<536 "),
    (p.layer_path, "a/./"),
])
def test_linear_on_hostile_text(parse, unit):
    assert_linear(parse, unit)
