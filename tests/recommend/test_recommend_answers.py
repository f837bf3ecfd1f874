"""Answers that were once wrong for the machine (issue 13; each failed before its fix): a working install left alone, unpublished variants, Jetson, PEP 668, nightlies, older releases, Python support per platform."""

from cudaenv.recommend import recommend
from cudaenv.render.recommend import render_text
from cudaenv.model.snapshot import Driver, Gpu, Platform, Snapshot, Torch

PY = "/venv/bin/python"


def machine(driver=None, gpus=(), torch=None, py="3.12.3", system="linux", arch="x86_64", managed=False):
    return Snapshot(platform=Platform(system=system, machine=arch), driver=Driver(version=driver) if driver else None,
                    gpus=tuple(Gpu(i, name=n, compute_capability=cc) for i, (n, cc) in enumerate(gpus)),
                    torch=Torch(python=PY, installed=bool(torch), version=torch, python_version=py, externally_managed=managed))


A100 = ("NVIDIA A100", "8.0")


def test_a_working_cpu_install_is_not_told_to_reinstall():
    rec = recommend(machine(torch="2.13.0+cpu"))
    assert rec.installed_fits and rec.ok and rec.commands == ()
    text = render_text(rec)
    assert "Nothing to install" in text and "pip install" not in text
    assert any(a.kind == "torch" and a.torch_version == "2.14.1" for a in rec.alternatives)  # a newer release, as an option


def test_a_working_cu130_install_on_a_580_driver_is_not_moved_sideways_to_cu132():
    rec = recommend(machine("580.95.05", [A100], "2.14.1+cu130"))
    assert rec.installed_fits and rec.commands == () and rec.variant == "cu130"
    # issue 27: cu132 runs on 580 only through minor-version compatibility: not chosen, and an option that says so
    assert not any(a.variant == "cu132" and "if you want it" in a.summary for a in rec.alternatives)
    assert any(a.variant == "cu132" and "minor-version compatibility only" in a.summary for a in rec.alternatives)
    rec = recommend(machine("595.71.05", [A100], "2.14.1+cu130"))  # 13.2's own driver: cu132 is an option
    assert rec.installed_fits and any(a.variant == "cu132" and "if you want it" in a.summary for a in rec.alternatives)


def test_an_unpublished_variant_is_named_as_such():
    rec = recommend(machine("560.35.03", [A100]), torch_version="2.14.1", variant="cu121")
    text = render_text(rec)
    assert text.startswith("cu121 has no torch 2.14.1.")
    assert "No torch 2.14.1 build fits" not in text


def test_a_what_if_python_names_the_interpreter_to_use():
    rec = recommend(machine("560.35.03", [A100], py="3.11.7"), torch_version="2.4.1", python_version="3.8")
    assert rec.ok and rec.commands[0].startswith("python3.8 -m pip install ")
    assert any("run the install with a Python 3.8 interpreter" in n for n in rec.notes)


def test_blackwell_on_a_550_driver_gets_the_driver_first():
    rec = recommend(machine("550.54.15", [("NVIDIA GeForce RTX 5090", "12.0")]), torch_version="2.7.1")
    assert not rec.ok
    assert any("no driver below 570 runs NVIDIA GeForce RTX 5090 (Blackwell, sm_120)" in r for r in rec.reasons)
    assert rec.alternatives[0].kind == "driver" and rec.alternatives[0].driver == "570"


def test_pep_668_one_recipe_for_recommend_and_doctor():
    from cudaenv.diagnose import diagnose

    snap = machine("580.95.05", [A100], py="3.12.3", managed=True)
    snap = Snapshot(platform=snap.platform, driver=snap.driver, gpus=snap.gpus,
                    torch=Torch(python="/usr/bin/python3", installed=False, python_version="3.12.3", externally_managed=True))
    rec = recommend(snap, torch_version="2.14.1")
    assert rec.commands[0].startswith("/usr/bin/python3 -m venv ~/.venvs/torch    # /usr/bin/python3 is externally managed (PEP 668)")
    assert rec.commands[1].startswith("~/.venvs/torch/bin/python -m pip install torch==2.14.1+cu130")
    assert not any(c.startswith("/usr/bin/python3 -m pip") for c in rec.commands)
    doctor = next(f for f in diagnose(snap) if f.id == "torch-missing")
    assert list(doctor.fix) == list(rec.commands)


H100 = ("NVIDIA H100", "9.0")


def test_a_nightly_is_judged_as_its_release():
    rec = recommend(machine("550.54.15", [H100], "2.7.0.dev20250310+cu124"))
    assert rec.torch_version == "2.7.0" and rec.ok
    assert any("nightly or pre-release: judged as its release, torch 2.7.0" in n for n in rec.notes)


def test_an_older_release_gets_a_real_answer():
    rec = recommend(machine("550.54.15", [H100], py="3.11.7"), torch_version="1.13.1")
    assert not rec.ok and "older than the bundled tables" in rec.reasons[0]
    assert rec.alternatives[0].summary.startswith("install torch >= 2.0.0 with cu118 or newer"), rec.alternatives
    assert "run `cudaenv torch refresh`" not in " ".join(rec.reasons)


def test_a_gpu_no_build_supports_gets_cpu_source_or_the_last_torch():
    rec = recommend(machine("470.82.01", [("Tesla K40", "3.5")]), torch_version="2.7.1")
    assert rec.variant is None
    kinds = [a.kind for a in rec.alternatives]
    assert "source" in kinds and any(a.variant == "cpu" for a in rec.alternatives)
    assert any("kernels for sm_35" in a.summary for a in rec.alternatives)


def test_an_older_release_respects_the_python():
    rec = recommend(machine("550.54.15", [H100], py="3.12.3"), torch_version="1.13.1")
    assert rec.alternatives[0].torch_version == "2.2.0"  # the first torch with Python 3.12 wheels


def test_jetson_gets_nvidia_jetpack_wheels_never_the_aarch64_index_or_a_driver_upgrade():
    from cudaenv.model.snapshot import Jetson

    snap = Snapshot(platform=Platform(system="linux", machine="aarch64", jetson=Jetson(l4t="36.4.3", jetpack="6.2")),
                    driver=Driver(version="540.4.0"), gpus=(Gpu(0, name="Orin", compute_capability="8.7"),),
                    torch=Torch(python=PY, installed=False, python_version="3.10.12"))
    rec = recommend(snap, torch_version="latest")
    assert rec.variant is None and rec.commands == ()
    assert "Jetson board (L4T 36.4.3, JetPack 6.2)" in rec.reasons[0]
    assert [a.kind for a in rec.alternatives] == ["jetpack"] and "jp6/cu126" in rec.alternatives[0].summary
    assert not any("download.pytorch.org" in (a.index_url or "") or a.kind == "driver" for a in rec.alternatives)
    old = recommend(Snapshot(platform=Platform(system="linux", machine="aarch64", jetson=Jetson(l4t="35.4.1", jetpack="5.1.2")),
                             torch=Torch(python=PY, python_version="3.10.12")))
    assert "JetPack 5.1" in old.alternatives[0].summary and any("Python 3.8" in n for n in old.notes)


def test_torchaudio_is_not_pinned_on_the_cu132_index_where_no_build_of_it_is_known():
    snap = Snapshot(platform=Platform(system="linux", machine="x86_64"), driver=Driver(version="595.71.05"),
                    gpus=(Gpu(0, name="NVIDIA A100", compute_capability="8.0"),),
                    torch=Torch(python=PY, installed=True, version="2.13.0+cpu", python_version="3.12.3",
                                companions=("torchaudio==2.11.0+cpu",)))
    rec = recommend(snap, torch_version="2.14.1")
    assert rec.variant == "cu132" and "torchaudio==2.11.0" in rec.packages and "torchaudio==2.11.0+cu132" not in rec.packages
    assert any("no build of it is known on the cu132 index" in n for n in rec.notes)


def test_reviewed_facts():
    from cudaenv.facts import torch as tf
    from cudaenv.core.resources import load_table

    rows = {(r["torch"], r["platform"]): r for r in load_table("torch_variants")["rows"]}
    assert rows[("2.12", "linux-aarch64")]["pypi_default"] == "cu130" and rows[("2.12", "linux-aarch64")]["confirmed"]
    assert rows[("2.13", "linux-aarch64")]["pypi_default"] == "cu130" and not rows[("2.13", "linux-aarch64")]["confirmed"]
    archs, _ = tf.arch_list_for("2.12.0", "cu126", "windows", "x86_64")
    assert "6.1" not in archs


def _width_ok(text, width):
    return all(len(line) <= width or " " not in line.strip() for line in text.splitlines())


def test_recommend_and_refresh_errors_fit_the_terminal(cli, fake_root, tmp_path):
    from builders import TOOLS

    for columns in ("80", "60"):
        env = {"PATH": TOOLS, "CUDAENV_CACHE_DIR": str(tmp_path / "c"), "COLUMNS": columns}
        res = cli("torch", "recommend", "--root", str(fake_root.path), "--torch", "2.6.0", "--driver", "570.86.15",
                  "--compute-capability", "12.0", "--compute-capability", "6.1", env=env)
        assert res.out.count("\n") > 5 and _width_ok(res.out, int(columns)), res.out
        res = cli("torch", "refresh", "--index-base", "http://127.0.0.1:9/whl", "--timeout", "1", env=env)
        assert res.code == 1 and _width_ok(res.err, int(columns)), res.err
        err = " ".join(res.err.split())
        assert "refused the connection" in err and "ConnectionError" not in err


def test_python_support_is_per_platform():
    # torch 2.5.1 had Python 3.13 wheels as experimental Linux builds only (data/torch_python.json's note, S13)
    windows = recommend(machine("560.35.03", [A100], py="3.13.1", system="windows"), torch_version="2.5.1")
    linux = recommend(machine("560.35.03", [A100], py="3.13.1", system="linux"), torch_version="2.5.1")
    assert linux.ok and not windows.ok
    assert any("no torch 2.5.1 cu124 wheel for Python 3.13" in p for c in windows.candidates for p in c.problems)
    summaries = [a.summary for a in windows.alternatives]
    # Windows' 12.6 ships driver 560.76: 560.35.03 runs cu126 through minor-version compatibility, cu124 natively
    assert "use torch >= 2.6.0 with cu124" in summaries and "use Python 3.9 to 3.12 for torch 2.5.1" in summaries


def test_when_no_release_fits_the_reasons_do_not_claim_one_does():
    rec = recommend(machine("535.104.05", [("Tesla K40m", "3.5")]))
    assert not rec.ok
    assert not any("the newest release that fits" in r for r in rec.reasons)
    assert any(r.startswith("no torch version asked for: no release fits") for r in rec.reasons)
