"""Scenarios for `cudaenv torch recommend`: the pure decision, then the command with fake GPUs on PATH."""

import pytest
from hypothesis import given, settings, strategies as st

from cudaenv.recommend import recommend
from cudaenv.render.recommend import render_pyproject, render_requirements, render_text
from cudaenv.model.record import replace
from cudaenv.model.snapshot import DeviceMapping, Driver, Gpu, Platform, Snapshot, Torch, VisibleDevices

from builders import TOOLS, recorded

PY = "/venv/bin/python"


def machine(driver=None, gpus=(), torch=None, system="linux", arch="x86_64", py="3.11.7", installer="pip", visible=None, wsl=None):
    vis = VisibleDevices()
    if visible is not None:
        vis = VisibleDevices(cuda_visible_devices=visible, mapping=tuple(DeviceMapping(i, int(p)) for i, p in enumerate(x for x in visible.split(",") if x)))
    return Snapshot(
        platform=Platform(system=system, machine=arch, wsl=wsl),
        driver=Driver(version=driver) if driver else None,
        gpus=tuple(Gpu(i, name=name, compute_capability=cc) for i, (name, cc) in enumerate(gpus)),
        visible_devices=vis,
        torch=Torch(python=PY, installed=bool(torch), version=torch, python_version=py, installer=installer),
    )


GTX1080TI = ("NVIDIA GeForce GTX 1080 Ti", "6.1")
RTX5090 = ("NVIDIA GeForce RTX 5090", "12.0")
H100 = ("NVIDIA H100 80GB HBM3", "9.0")
RTX3090 = ("NVIDIA GeForce RTX 3090", "8.6")


def test_gtx_1080_ti_driver_560_torch_271_gets_cu126_not_cu128():
    rec = recommend(machine("560.35.03", [GTX1080TI], "2.7.1+cpu"), companions={"torchvision": "0.22.1+cpu"})
    assert (rec.variant, rec.torch_version, rec.ok) == ("cu126", "2.7.1", True)
    assert rec.index_url == "https://download.pytorch.org/whl/cu126"
    text = " | ".join(rec.reasons)
    assert "driver 560.35.03 runs CUDA <= 12.x" in text
    assert "sm_61" in text and "cu128" in text and "cu118, cu126, cu128" in text
    # the same public version is installed as +cpu: the pins carry the local tag, or pip says "already satisfied"
    assert rec.commands == (PY + " -m pip install torch==2.7.1+cu126 torchvision==0.22.1+cu126 --index-url https://download.pytorch.org/whl/cu126",)
    assert [a.variant for a in rec.alternatives] == ["cu118"]


def test_rtx_5090_driver_570_torch_26_nothing_fits_says_torch_27_cu128():
    rec = recommend(machine("570.86.15", [RTX5090], "2.6.0+cu124"))
    assert rec.variant is None and not rec.ok and rec.commands == ()
    assert rec.torch_version == "2.6.0"
    assert all("sm_120" in r for r in rec.reasons if r.startswith("cu1"))
    newer = [a for a in rec.alternatives if a.kind == "torch"]
    assert newer and newer[0].torch_version == "2.7.0" and newer[0].variant == "cu128"
    assert "torch >= 2.7.0 with cu128" in newer[0].summary
    assert "What to change" in render_text(rec)


def test_h100_driver_550_torch_251_gets_cu124():
    rec = recommend(machine("550.54.15", [H100]), torch_version="2.5.1")
    assert (rec.variant, rec.ok) == ("cu124", True)
    # issue 13: pinned with the local tag, so an extra index's build of 2.5.1 cannot win
    assert rec.commands == (PY + " -m pip install torch==2.5.1+cu124 --index-url https://download.pytorch.org/whl/cu124",)


def test_no_gpu_gets_cpu():
    rec = recommend(machine(None, []))
    assert (rec.variant, rec.torch_version) == ("cpu", "2.14.1")
    assert rec.index_url.endswith("/whl/cpu")
    assert "no NVIDIA GPU" in " ".join(rec.reasons)


def test_windows_driver_52833_gets_a_12x_variant():
    rec = recommend(machine("528.33", [], system="windows", arch="AMD64"))
    assert rec.variant.startswith("cu12") and rec.ok
    assert rec.variant == "cu126"
    assert any(r.startswith("cu130: needs driver >= 580") for r in rec.reasons)
    # one below the Windows 12.x minimum: only older CUDA 11.8 builds (torch <= 2.7.1)
    rec = recommend(machine("527.41", [], system="windows", arch="AMD64"))
    assert (rec.variant, rec.torch_version) == ("cu118", "2.7.1")


def test_cu121_request_for_torch_26_explains_it_stops_at_251():
    rec = recommend(machine("560.35.03", [RTX3090]), torch_version="2.6", variant="cu121")
    assert rec.variant is None and not rec.ok
    assert any("cu121 stops at torch 2.5.1" in r for r in rec.reasons)
    kinds = {(a.kind, a.variant, a.torch_version) for a in rec.alternatives}
    assert ("torch", "cu121", "2.5.1") in kinds and ("variant", "cu126", "2.6.0") in kinds


def test_requested_variant_that_is_published_but_does_not_fit_says_why():
    rec = recommend(machine("560.35.03", [GTX1080TI]), torch_version="2.7.1", variant="cu128")
    assert rec.variant == "cu128" and not rec.ok and rec.commands
    assert any("does not fit" in r and "sm_61" in r for r in rec.reasons)


def test_every_visible_gpu_counts():
    # a 1080 Ti beside an RTX 5090: torch 2.7.1 has no variant for both (cu126 lacks sm_120, cu128 lacks sm_61)
    rec = recommend(machine("575.51.03", [GTX1080TI, RTX5090]), torch_version="2.7.1")
    assert rec.variant is None
    # hide the 1080 Ti with CUDA_VISIBLE_DEVICES=1: cu128
    rec = recommend(machine("575.51.03", [GTX1080TI, RTX5090], visible="1"), torch_version="2.7.1")
    assert rec.variant == "cu128"
    # CUDA_VISIBLE_DEVICES= hides all: the machine's GPUs decide (a setting is the user's to fix, never a CPU plan)
    rec = recommend(machine("575.51.03", [GTX1080TI, RTX5090], visible=""), torch_version="2.7.1")
    assert rec.variant is None and any("hides every GPU" in n for n in rec.notes)
    rec = recommend(machine("575.51.03", [RTX5090], visible=""), torch_version="2.7.1")
    assert rec.variant == "cu128" and any("hides every GPU" in n for n in rec.notes)


@pytest.mark.parametrize("visible", ["", "7", "GPU-nope"])
def test_a_setting_that_hides_every_gpu_never_plans_the_cpu_build(visible):
    m = machine("575.51.03", [RTX5090], visible=None)
    m = replace(m, visible_devices=VisibleDevices(cuda_visible_devices=visible, entries=(visible,) if visible else (),
                                                  invalid_entry=visible or None))
    rec = recommend(m)
    assert rec.variant not in (None, "cpu") and rec.variant.startswith("cu"), rec


def test_old_driver_nothing_fits_names_the_driver_upgrade_and_older_torch():
    rec = recommend(machine("520.61.05", [("NVIDIA GeForce RTX 2080 Ti", "7.5")]), torch_version="2.13.0")
    assert rec.variant is None
    drivers = [a for a in rec.alternatives if a.kind == "driver"]
    assert drivers[0].driver == "525.60.13" and drivers[0].variant == "cu126"
    older = [a for a in rec.alternatives if a.kind == "torch"]
    assert older[0].torch_version == "2.7.1" and older[0].variant == "cu118"


def test_no_torch_installed_picks_the_newest_release_that_fits():
    # Kepler K80 (3.7): only cu118 builds carry sm_37, the last one is torch 2.7.1
    rec = recommend(machine("470.82.01", [("Tesla K80", "3.7")]))
    assert (rec.variant, rec.torch_version) == ("cu118", "2.7.1")


def test_ptx_needs_a_driver_that_can_jit_it():
    # torch 2.13.0 cu130 shipped 12.0+PTX: a hypothetical 12.x-major GPU newer than sm_120 would run it via PTX
    ok = recommend(machine("580.95.05", [("future GPU", "12.9")]), torch_version="2.13.0", variant="cu130")
    assert ok.ok
    # cu132 has no PTX: no kernels for it
    assert not recommend(machine("580.95.05", [("future GPU", "13.5")]), torch_version="2.13.0", variant="cu132").ok


def test_python_version_outside_the_release():
    rec = recommend(machine("560.35.03", [RTX3090], py="3.9.18"), torch_version="2.13.0")
    assert rec.variant is None
    assert any(a.kind == "python" for a in rec.alternatives)
    assert any(a.kind == "torch" and a.torch_version == "2.8.0" for a in rec.alternatives)
    # no version asked for: the newest torch for Python 3.9
    assert recommend(machine("560.35.03", [RTX3090], py="3.9.18")).torch_version == "2.8.0"


def test_what_if_flags_replace_the_probed_facts():
    rec = recommend(machine(None, []), driver="550.54.15", compute_capabilities=["8.6"], system="windows", python_version="3.12", torch_version="latest")
    assert rec.variant == "cu126" and rec.platform == "windows-x86_64"
    assert any("Python 3.12" in r for r in rec.reasons)


def test_macos_gets_the_plain_pypi_wheel():
    rec = recommend(machine(None, [], system="darwin", arch="arm64"), torch_version="2.7.1", companions={"torchaudio": "2.7.0"})
    assert rec.variant == "default" and rec.index_url is None
    assert rec.commands == (PY + " -m pip install torch==2.7.1 torchaudio==2.7.1",)
    intel = recommend(machine(None, [], system="darwin", arch="x86_64"), torch_version="2.7.1")
    assert intel.variant is None and any(a.torch_version == "2.2.2" for a in intel.alternatives)


def test_rocm_and_xpu_from_the_accelerator_signal():
    assert recommend(machine(None, []), torch_version="2.7.1", accelerator="rocm").variant == "rocm6.3"
    assert recommend(machine(None, []), torch_version="2.7.1", accelerator="xpu").variant == "xpu"
    # ROCm wheels exist on Linux x86_64 only
    assert recommend(machine(None, [], system="windows"), torch_version="2.7.1", accelerator="rocm").variant == "cpu"


@pytest.mark.parametrize("driver, gpus, torch_version, variant", [
    ("580.95.05", [H100], "2.14.1", "cu130"),  # cu132 needs 595 natively: 580 runs it by minor-version compatibility only
    ("595.71.05", [H100], "2.14.1", "cu132"),
    ("535.104.05", [H100], "2.5.1", "cu121"),  # cu124 needs 550 natively
    ("560.35.03", [RTX3090], "2.7.1", "cu126"),  # cu128 needs 570 natively
    ("535.104.05", [RTX3090], "2.9.0", "cu128"),  # nothing native (12.6 needs 560): the newest that runs
])
def test_the_newest_build_the_driver_runs_natively_wins(driver, gpus, torch_version, variant):
    rec = recommend(machine(driver, gpus), torch_version=torch_version)
    assert (rec.variant, rec.ok) == (variant, True), rec.reasons


def test_uv_environment_gets_uv_pip_and_mirror_base():
    rec = recommend(machine("575.51.03", [RTX3090], installer="uv"), torch_version="2.7.1", index_base="https://mirror.example/pytorch/whl/")
    assert rec.commands == ("uv pip install --python %s torch==2.7.1+cu128 --index-url https://mirror.example/pytorch/whl/cu128" % PY,)


def test_wsl2_driver_is_judged_with_the_windows_minimums():
    # 527.41 is above Linux's 525.60.13 but below Windows' 528.33: WSL2 runs the Windows driver
    rec = recommend(machine("527.41", [RTX3090], wsl=2), torch_version="2.7.1")
    assert rec.variant == "cu118"


def test_requirements_and_pyproject_snippets():
    rec = recommend(machine("575.51.03", [RTX3090]), torch_version="2.7.1", companions={"torchvision": "0.21.0", "torchaudio": "2.6.0"})
    req = render_requirements(rec)
    assert req.splitlines()[1:] == ["--extra-index-url https://download.pytorch.org/whl/cu128", "torch==2.7.1+cu128",
                                   "torchvision==0.22.1+cu128", "torchaudio==2.7.1+cu128"]
    pyproject = render_pyproject(rec)
    assert 'dependencies = ["torch==2.7.1", "torchvision==0.22.1", "torchaudio==2.7.1"]' in pyproject
    assert 'url = "https://download.pytorch.org/whl/cu128"' in pyproject and 'torch = [{ index = "pytorch-cu128" }]' in pyproject
    import tomllib  # noqa: F401  (3.11+ in the test venvs); the snippet must parse

    data = tomllib.loads(pyproject)
    assert data["tool"]["uv"]["index"][0]["explicit"] is True


@pytest.mark.parametrize("where, torch_version, companions, tagged", [
    (("560.35.03", [RTX3090]), "2.7.1", {"torchvision": "0.21.0", "torchaudio": "2.6.0"}, 3),
    # torchaudio 2.11 is not rebuilt for torch 2.14: it keeps its plain pin beside the tagged torch and torchvision
    (("560.35.03", [RTX3090]), "2.14.1", {"torchvision": "0.28.0", "torchaudio": "2.11.0"}, 2),
    ((None, []), "2.14.1", {"torchaudio": "2.11.0"}, 1),  # +cpu on linux-x86_64
    ((None, [], None, "linux", "aarch64"), "2.7.1", {"torchvision": "0.21.0"}, 0),  # CPU wheels on aarch64 are untagged
])
def test_requirements_print_the_decisions_own_pins(where, torch_version, companions, tagged):
    rec = recommend(machine(*where), torch_version=torch_version, companions=companions)
    assert sum(p.endswith("+" + rec.variant) for p in rec.packages) == tagged, rec.packages
    lines = render_requirements(rec).splitlines()
    assert tuple(lines[2:]) == rec.packages and rec.packages
    tagged = any(p.endswith("+" + rec.variant) for p in rec.packages)
    assert lines[1] == ("--extra-index-url " if tagged else "--index-url ") + rec.index_url


def test_requirements_follow_the_tables_the_decision_was_given():
    # a policy table without local-tag rows: the decision pins plain versions, and so does the snippet
    from cudaenv.core.resources import load_table

    policy = load_table("torch_policy")
    plain = dict(policy, rows=[r for r in policy["rows"] if r["rule"] != "local_tag"])
    rec = recommend(machine("575.51.03", [RTX3090]), torch_version="2.7.1", companions={"torchvision": "0.21.0"},
                    tables={"torch_policy": plain})
    assert rec.packages == ("torch==2.7.1", "torchvision==0.22.1")
    assert render_requirements(rec).splitlines()[1:] == ["--index-url https://download.pytorch.org/whl/cu128",
                                                        "torch==2.7.1", "torchvision==0.22.1"]


def test_to_dict_has_the_documented_keys():
    d = recommend(machine("560.35.03", [GTX1080TI]), torch_version="2.7.1").to_dict()
    assert {"variant", "index_url", "torch_version", "commands", "reasons", "alternatives"} <= set(d)
    assert d["variant"] == "cu126" and isinstance(d["alternatives"][0], dict)


@settings(max_examples=60)
@given(st.sampled_from(["2.0.1", "2.5.1", "2.7.1", "2.8.0", "2.13.0", "latest", None]),
       st.one_of(st.none(), st.sampled_from(["418.39", "470.82.01", "525.60.13", "560.35.03", "580.95.05", "600.1"])),
       st.lists(st.sampled_from(["3.5", "3.7", "5.0", "6.1", "7.0", "7.5", "8.6", "8.9", "9.0", "10.0", "12.0", "12.1"]), max_size=3),
       st.sampled_from(["linux", "windows", "darwin"]), st.sampled_from(["x86_64", "aarch64"]))
def test_any_machine_gets_an_answer_or_a_way_out(torch, driver, ccs, system, arch):
    rec = recommend(machine(driver, [("gpu", c) for c in ccs]), torch_version=torch, system=system, machine=arch)
    assert rec.reasons
    if rec.ok:
        assert rec.commands and rec.variant
    render_text(rec)


# ------------------------------------------------------------------ the command, with a fake nvidia-smi
def _smi(fake_bin):
    fake_bin.command("nvidia-smi", recorded("smi-banner-550-single.txt"), by_args={"--query-gpu": (recorded("smi-query-2080ti-x4.txt"), 0)})


def test_command_with_four_2080ti_and_driver_520(cli, fake_root, fake_bin, tmp_path):
    _smi(fake_bin)
    env = {"PATH": fake_bin.env_path, "CUDAENV_CACHE_DIR": str(tmp_path / "cache")}
    res = cli("torch", "recommend", "--root", str(fake_root.path), "--torch", "2.13.0", "--python-version", "3.11", "--json", env=env)
    assert res.code == 1, res
    data = res.json()
    assert data["variant"] is None
    assert any("driver 520.61.05" in r for r in data["reasons"])
    assert any(a["kind"] == "driver" and a["driver"] == "525.60.13" for a in data["alternatives"])
    res = cli("torch", "recommend", "--root", str(fake_root.path), "--torch", "2.7.1", "--python", "3.11", env=env)
    assert res.code == 0 and "torch 2.7.1, cu118" in res.out, res
    assert "NVIDIA GeForce RTX 2080 Ti is sm_75" in res.out


def test_command_what_if_env_driver_and_formats(cli, fake_root, tmp_path):
    env = {"PATH": TOOLS, "CUDAENV_DRIVER_VERSION": "560.35.03", "CUDAENV_CACHE_DIR": str(tmp_path / "c"),
           "CUDAENV_TORCH_INDEX": "https://mirror.example/whl"}
    res = cli("torch", "recommend", "--root", str(fake_root.path), "--compute-capability", "6.1", "--torch", "2.7.1",
              "--format", "requirements", env=env)
    assert res.code == 0, res
    assert "--extra-index-url https://mirror.example/whl/cu126" in res.out and "torch==2.7.1+cu126" in res.out
    bad = cli("torch", "recommend", "--root", str(fake_root.path), "--driver", "five-fifty", env=env)
    assert bad.code == 2 and "--driver five-fifty is not a driver version" in bad.err
    for what, flags in (("a compute capability", ("--compute-capability", "8.x")), ("a Python version", ("--python-version", "3.11rc1"))):
        bad = cli("torch", "recommend", "--root", str(fake_root.path), *flags, env=env)
        assert bad.code == 2 and "%s %s is not %s" % (flags[0], flags[1], what) in bad.err, bad


def test_command_installer_uv_and_uv_auto(cli, fake_root, tmp_path):
    # issue 31: --installer uv gives uv's line; the JSON names the build uv's `auto` would pick (driver only)
    env = {"PATH": TOOLS, "CUDAENV_DRIVER_VERSION": "570.86.10", "CUDAENV_CACHE_DIR": str(tmp_path / "c")}
    res = cli("torch", "recommend", "--root", str(fake_root.path), "--compute-capability", "6.1", "--torch", "2.7.1",
              "--installer", "uv", "--json", env=env)
    assert res.code == 0, res
    data = res.json()
    assert data["installer"] == "uv" and data["commands"][0].startswith("uv pip install --python ")
    assert data["commands"][0].endswith("torch==2.7.1+cu126 --index-url https://download.pytorch.org/whl/cu126")
    assert data["variant"] == "cu126" and data["uv_auto"] == "cu128"
    bad = cli("torch", "recommend", "--root", str(fake_root.path), "--installer", "poetry", env=env)
    assert bad.code == 2


def test_command_python_version_and_variant(cli, fake_root, tmp_path):
    env = {"PATH": TOOLS, "CUDAENV_CACHE_DIR": str(tmp_path / "c")}
    res = cli("torch", "recommend", "--root", str(fake_root.path), "--driver", "560.35.03", "--compute-capability", "8.6",
              "--torch", "2.6", "--variant", "cu121", env=env)
    assert res.code == 1 and "cu121 stops at torch 2.5.1" in res.out, res


def test_command_os_macos_means_apple_silicon_unless_told(cli, fake_root, tmp_path):
    env = {"PATH": TOOLS, "CUDAENV_CACHE_DIR": str(tmp_path / "c")}
    res = cli("torch", "recommend", "--root", str(fake_root.path), "--os", "macos", "--torch", "2.7.1", "--json", env=env)
    assert res.code == 0 and res.json()["platform"] == "macos-arm64" and res.json()["index_url"] is None, res
    res = cli("torch", "recommend", "--root", str(fake_root.path), "--os", "macos", "--machine", "x86_64", "--torch", "2.7.1", "--json", env=env)
    assert res.code == 1 and res.json()["variant"] is None


def test_gtx_1080_ti_on_windows_torch_271_gets_cu128():
    # measured (data/torch_arch.json S23): the Windows 2.7.1+cu128 wheel still carries sm_61, unlike Linux
    rec = recommend(machine("576.02", [GTX1080TI], "2.7.1+cpu", system="windows", arch="AMD64"))
    assert (rec.variant, rec.platform, rec.ok) == ("cu128", "windows-x86_64", True)
    linux = recommend(machine("576.02", [GTX1080TI], "2.7.1+cpu"))
    assert linux.variant == "cu126"
    # torch 2.10 on Windows: cu128 has the Linux list (sm_70 and up), so cu126 again
    assert recommend(machine("576.02", [GTX1080TI], "2.10.0+cpu", system="windows", arch="AMD64")).variant == "cu126"



def test_what_a_build_lacks_is_a_flag_not_a_word_of_its_sentences():
    """driver_only and the alternatives read the judge's flags (no wheel, no kernels), not words of its problem
    sentences: a GPU whose name has "driver" in it made cu128 (no sm_61 kernels) look fixable by a driver upgrade."""
    plain = recommend(machine("450.36.06", [("NVIDIA GeForce GTX 1080 Ti", "6.1")]), torch_version="2.7.1")
    odd = recommend(machine("450.36.06", [("nodriver GTX 1080 Ti", "6.1")]), torch_version="2.7.1")
    assert [(a.kind, a.variant, a.driver) for a in odd.alternatives] == [(a.kind, a.variant, a.driver) for a in plain.alternatives]
    assert [a.variant for a in odd.alternatives if a.kind == "driver"] == ["cu118", "cu126"]


def test_uv_auto_would_pick_a_build_without_kernels_for_the_gpu():
    # issue 31: uv's --torch-backend=auto reads only the driver (astral-sh/uv#14742): on a 1080 Ti with driver 570 it
    # would take cu128, which has no sm_61 kernels; cudaenv picks cu126 and says why
    rec = recommend(machine("570.86.10", [GTX1080TI], "2.7.1+cpu"))
    assert (rec.variant, rec.uv_auto) == ("cu126", "cu128")
    assert rec.to_dict()["uv_auto"] == "cu128"
    text = render_text(rec)
    assert "uv's --torch-backend=auto would pick cu128" in text and "sm_61" in text and "--torch-backend=cu126" in text
    same = recommend(machine("570.86.10", [RTX3090], "2.7.1+cpu"))  # an Ampere GPU: both pick the newest
    assert same.uv_auto is None and "torch-backend=auto" not in render_text(same)


# ------------------------------------------------------------------ issue 28: macOS's Python, a Jetson what-if
def test_macos_enforces_the_python_of_the_plain_wheel():
    """torch 2.5.1 has no Python 3.13 wheel for macOS (data/torch_python.json): before issue 28 this 'fit'."""
    rec = recommend(machine(None, [], system="darwin", arch="arm64", py="3.13.1"), torch_version="2.5.1")
    assert rec.variant is None and not rec.ok
    assert any("no torch 2.5.1 default wheel for Python 3.13" in r for r in rec.reasons)
    kinds = {a.kind: a for a in rec.alternatives}
    assert kinds["python"].summary.startswith("use Python 3.9 to 3.12") and kinds["torch"].torch_version == "2.6.0"
    ok = recommend(machine(None, [], system="darwin", arch="arm64", py="3.12.4"), torch_version="2.5.1")
    assert ok.variant == "default" and ok.ok


def test_command_jetson_what_if_reaches_the_jetson_tables(cli, fake_root, tmp_path):
    env = {"PATH": TOOLS, "CUDAENV_CACHE_DIR": str(tmp_path / "c")}
    res = cli("torch", "recommend", "--root", str(fake_root.path), "--jetson", "6.2", "--json", env=env)
    data = res.json()
    assert data["platform"] == "linux-aarch64" and data["variant"] is None, res
    assert any("Jetson board (L4T 36.4.3, JetPack 6.2)" in r for r in data["reasons"])
    assert any(a["kind"] == "jetpack" and "JetPack 6.2" in a["summary"] for a in data["alternatives"])
    res = cli("torch", "recommend", "--root", str(fake_root.path), "--jetson", "r35.4.1", "--json", env=env)
    assert any("L4T 35.4.1, JetPack 5.1.2" in r for r in res.json()["reasons"]), res
    res = cli("torch", "recommend", "--root", str(fake_root.path), "--jetson", "99", env=env)
    assert res.code == 2 and "--jetson 99" in res.err
