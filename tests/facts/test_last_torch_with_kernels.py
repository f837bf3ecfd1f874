"""One answer to "the last torch with kernels for this GPU" per (GPU, platform) (issue 25): ``cudaenv.facts.torch.
last_torch_with_kernels``, which ``cudaenv explain`` (a capability warning) and ``torch recommend`` (no build fits)
both ask. Before, explain named cu132 and recommend's alternatives cu126 for sm_80 on linux-x86_64 (the order of
data/torch_arch.json's rows decided), and explain named x86 wheels for a paste from an aarch64 machine."""

import pytest

from cudaenv.explain import classify_all
from cudaenv.facts.torch import last_torch_with_kernels
from cudaenv.recommend.alternatives import no_build_options
from cudaenv.recommend.view import Facts, Machine

# torch's own warning (torch/cuda/__init__.py _check_capability, the form in data/error_patterns.json's source
# "capability"), constructed for an AWS g5g node: a T4G (sm_75) on a Graviton (aarch64) host, and an A100 (sm_80)
TOO_OLD = ("{path}/torch/cuda/__init__.py:287: UserWarning:\n"
           "    Found GPU0 {name} which is of cuda capability {cc}.\n"
           "    PyTorch no longer supports this GPU because it is too old.\n"
           "    The minimum cuda capability supported by this library is 9.0.\n")
AARCH64_SITE = "/home/ubuntu/venv/lib/python3.12/site-packages/torch-2.5.1-cp312-cp312-manylinux_2_28_aarch64"
X86_SITE = "/home/me/venv/lib/python3.12/site-packages"


@pytest.mark.parametrize("ccs, platform, expected", [
    (["8.0"], "linux-x86_64", ("2.14.1", "cu132")),  # the newest CUDA of the newest release, not the first row's cu126
    (["8.0"], "windows-x86_64", ("2.14.1", "cu132")),
    (["6.1"], "linux-x86_64", ("2.14.1", "cu126")),  # only cu126 has sm_60 code, which a 6.1 GPU runs
    (["3.5"], "linux-x86_64", None),  # no build from 2.0 on targets Kepler 3.5 (3.7 is not 3.5's code)
    (["3.7"], "linux-x86_64", ("2.7.1", "cu118")),
    (["7.5"], "linux-aarch64", None),  # no aarch64 build has sm_75 code (the x86 answer would be 2.14.1 cu132)
    (["7.0"], "linux-aarch64", None),
    (["9.0"], "linux-aarch64", ("2.14.1", "cu132")),
    (["8.0", "6.1"], "linux-x86_64", ("2.14.1", "cu126")),  # every GPU of the machine
    ([], "linux-x86_64", None),
    (["garbage"], "linux-x86_64", None),
])
def test_the_answer(ccs, platform, expected):
    assert last_torch_with_kernels(ccs, platform) == expected


def test_the_order_of_the_rows_does_not_decide():
    from cudaenv.core.resources import load_table

    table = load_table("torch_arch")
    shuffled = dict(table, rows=list(reversed(table["rows"])))
    for cc in ("5.0", "6.1", "7.0", "8.0", "8.6", "9.0", "12.0"):
        for platform in ("linux-x86_64", "linux-aarch64", "windows-x86_64"):
            assert last_torch_with_kernels([cc], platform, shuffled) == last_torch_with_kernels([cc], platform), (cc, platform)


def _machine(platform, ccs):
    system, arch = platform.split("-")
    return Machine(system, arch, platform, "580.95.05", system, [("GPU", cc) for cc in ccs], True, "3.12", "cuda")


def _recommend_says(platform, cc):
    last = [a for a in no_build_options(_machine(platform, [cc]), Facts()) if a.summary.startswith("the last torch")]
    return (last[0].torch_version, last[0].variant) if last else None


def _explain_says(paste):
    match = next(m for m in classify_all(paste) if m.id == "gpu-too-old-for-torch")
    values = dict(match.values)
    return ((values["last_torch"], values["last_variant"]) if "last_torch" in values else None), match


def test_explain_and_recommend_name_the_same_build_for_sm_80_on_linux_x86_64():
    said, match = _explain_says(TOO_OLD.format(path=X86_SITE, name="NVIDIA A100-SXM4-40GB", cc="8.0"))
    assert said == _recommend_says("linux-x86_64", "8.0") == ("2.14.1", "cu132")
    assert any("pip install torch==2.14.1 --index-url https://download.pytorch.org/whl/cu132" in a for a in match.advice)


def test_a_paste_from_an_aarch64_machine_gets_no_x86_wheel():
    said, match = _explain_says(TOO_OLD.format(path=AARCH64_SITE, name="NVIDIA T4G", cc="7.5"))
    assert said is None and said == _recommend_says("linux-aarch64", "7.5")
    assert not any("download.pytorch.org/whl/cu" in a for a in match.advice)
    assert any(a.startswith("No torch wheel") for a in match.advice)
    said, _ = _explain_says(TOO_OLD.format(path=AARCH64_SITE, name="NVIDIA GH200 480GB", cc="8.0"))
    assert said == _recommend_says("linux-aarch64", "8.0") == ("2.14.1", "cu132")


def test_the_platform_is_never_a_value_shown():
    _, match = _explain_says(TOO_OLD.format(path=AARCH64_SITE, name="NVIDIA T4G", cc="7.5"))
    assert "wheel_platform" not in dict(match.values)
