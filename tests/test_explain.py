"""cudaenv explain: every pattern matched by its real recorded text, the table's invariants, the CLI."""

import inspect
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import RECORDED, TOOLS, recorded
from cudaenv.explain import classify_all, classify_error, context_lines, describe, known_ids, render_match, render_unknown
from cudaenv.resources import load_table

ERR_FILES = sorted(p.name for p in RECORDED.glob("err-*.txt"))


def expected_id(name: str) -> str:
    return re.sub(r"-\d+$", "", name[len("err-"):-len(".txt")])


@pytest.mark.parametrize("name", ERR_FILES)
def test_each_recorded_error_is_classified_as_its_id(name):
    match = classify_error(recorded(name))
    assert match is not None, name
    assert match.id == expected_id(name)
    assert match.title and match.explanation and match.advice


def test_every_pattern_row_has_a_recorded_text():
    covered = {expected_id(n) for n in ERR_FILES}
    assert set(known_ids()) - covered == set()


def test_every_recorded_file_names_its_source():
    for name in ERR_FILES:
        head = (RECORDED / name).read_text(encoding="utf-8").splitlines()[0]
        assert head.startswith("# source: ") and len(head) > 20, name


def test_table_invariants():
    table = load_table("error_patterns")
    ids = [row["id"] for row in table["rows"]]
    assert len(ids) == len(set(ids))
    for row in table["rows"]:
        assert row["source"] in table["sources"], row["id"]
        assert row["patterns"] and row["advice"], row["id"]
        for pattern in row["patterns"]:
            re.compile(pattern)
        groups = set()
        for pattern in row["patterns"]:
            groups |= set(re.compile(pattern).groupindex)
        for template in row.get("details", []) + row["advice"] + [row["explanation"]]:
            for name in re.findall(r"\{(\w+)\}", template):
                assert name in groups or name[: -len("_cuda")] + "_cuda_int" in groups or name.endswith("_cuda"), (row["id"], name)


def test_ids_shared_with_the_doctor_are_doctor_findings():
    """Rows marked doctor_finding use the doctor's own ids (issue 3), so both commands mean the same thing."""
    import cudaenv.diagnose as diagnose_pkg

    folder = Path(inspect.getfile(diagnose_pkg)).parent
    source = "\n".join(p.read_text(encoding="utf-8") for p in folder.glob("*.py"))
    shared = [row["id"] for row in load_table("error_patterns")["rows"] if row.get("doctor_finding")]
    assert {"gpu-arch-unsupported", "driver-too-old-for-torch", "torch-cpu-only", "torch-cuda-unavailable", "no-driver"} <= set(shared)
    for error_id in shared:
        assert '"%s"' % error_id in source, error_id


def test_values_fill_the_details_and_advice():
    m = classify_error(recorded("err-checkpoint-device-missing.txt"))
    assert dict(m.values) == {"device": "2", "count": "1"}
    assert "The checkpoint wants cuda:2; torch here sees 1 GPU(s)." in m.details
    assert any('{"cuda:2": "cuda:0"}' in a for a in m.advice)
    m = classify_error(recorded("err-checkpoint-device-missing-2.txt"))  # no device number: that advice line is dropped
    assert m.id == "checkpoint-device-missing" and not any("{device}" in a or "cuda:{" in a for a in m.advice)
    m = classify_error(recorded("err-driver-too-old-for-torch.txt"))
    assert m.details == ("The driver reports CUDA 11.4 as the newest it supports.",)
    m = classify_error(recorded("err-cuda-oom.txt"))
    assert "It asked for 22.00 MiB." in m.details
    assert "GPU 0 has 23.65 GiB in all, 11.06 MiB free at that moment." in m.details
    m = classify_error(recorded("err-gpu-arch-unsupported-2.txt"))
    assert "The GPU is sm_120." in m.details
    m = classify_error(recorded("err-nvcc-host-compiler-unsupported.txt"))
    assert any("-ccbin g++-12" in a for a in m.advice)


def test_priority_order_picks_the_specific_error_first():
    # NCCL's watchdog timeout mentions NCCL: it is a timeout, not a generic NCCL error
    assert classify_error(recorded("err-nccl-timeout.txt")).id == "nccl-timeout"
    # the UserWarning before a RuntimeError: both lines classify the same way
    text = recorded("err-gpu-arch-unsupported-2.txt") + "\n" + recorded("err-gpu-arch-unsupported.txt")
    assert [m.id for m in classify_all(text)] == ["gpu-arch-unsupported"]
    # a traceback with two problems shows both, the first one first
    both = recorded("err-cuda-oom.txt") + "\nDuring handling of the above exception, another exception occurred:\n" + recorded("err-cublas-not-initialized.txt")
    ids = [m.id for m in classify_all(both)]
    assert ids[0] == "cuda-oom" and "cublas-not-initialized" in ids


def test_torch_missing_does_not_match_other_modules():
    assert classify_error("ModuleNotFoundError: No module named 'torchvision'") is None
    assert classify_error("ModuleNotFoundError: No module named 'torch._C'") is None
    assert classify_error("ModuleNotFoundError: No module named 'torch'").id == "torch-missing"


def test_unknown_text_is_none_and_the_unknown_render_says_what_to_paste():
    assert classify_error("the printer is on fire") is None
    assert classify_error("") is None and classify_all("   \n") == []
    text = render_unknown()
    assert "did not recognise" in text
    assert "Traceback (most recent call last)" in text and "cudaenv doctor --format markdown" in text
    assert all(len(line) <= 80 for line in text.splitlines())


def test_render_match_fits_80_columns_and_lists_others():
    both = recorded("err-cuda-oom.txt") + "\n" + recorded("err-cublas-not-initialized.txt")
    matches = classify_all(both)
    text = render_match(matches[0], 80, others=matches)
    assert text.startswith("cuda-oom: the GPU ran out of memory")
    assert "What to do:" in text and "Also in this text: cublas-not-initialized" in text
    assert all(len(line) <= 80 for line in text.splitlines())


def test_context_lines_use_the_probe_facts():
    m = classify_error(recorded("err-checkpoint-device-missing.txt"))
    facts = {"torch": "2.13.0+cu130", "device_count": 1, "cuda_visible_devices": "3", "python": "/venv/bin/python"}
    lines = context_lines(m, facts)
    assert "Here torch sees 1 GPU(s): cuda:0." in lines
    assert "CUDA_VISIBLE_DEVICES='3' in this environment." in lines
    assert "Use map_location='cuda:0' here (cuda:2 does not exist)." in lines
    assert context_lines(m, None) == []
    arch = classify_error(recorded("err-gpu-arch-unsupported.txt"))
    lines = context_lines(arch, {"torch": "2.7.1+cu128", "cuda": "12.8", "arch_list": ["sm_75", "sm_120"],
                                 "devices": [{"name": "NVIDIA GeForce GTX 1080 Ti", "capability": "6.1"}]})
    assert "This torch has kernels for: sm_75 sm_120." in lines and "cuda:0 NVIDIA GeForce GTX 1080 Ti is sm_61." in lines


def test_describe_gives_the_entry_for_an_id():
    d = describe("torch-cpu-only")
    assert d.title == "this torch is a CPU-only build" and d.doctor_finding
    assert describe("no-such-id") is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=3000))
def test_any_text_in_no_exception_out(text):
    for m in classify_all(text):
        render_match(m, 80, context_lines(m, {"device_count": 0}), [])
    classify_error(text)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(ERR_FILES), st.text(max_size=200), st.text(max_size=200))
def test_recorded_texts_inside_noise_still_classify(name, before, after):
    text = before + "\n" + recorded(name) + "\n" + after
    assert classify_error(text) is not None


# ------------------------------------------------------------------ the command
def test_cli_explains_an_argument(cli):
    r = cli("explain", "RuntimeError: CUDA error: invalid device ordinal")
    assert r.code == 0, r
    assert r.out.startswith("invalid-device-ordinal: that GPU number does not exist")
    assert "CUDA_VISIBLE_DEVICES" in r.out and "What to do:" in r.out


def test_cli_json(cli):
    r = cli("explain", "--json", recorded("err-checkpoint-device-missing.txt"))
    assert r.code == 0
    data = r.json()
    assert data["recognised"] is True
    assert data["match"]["id"] == "checkpoint-device-missing"
    assert data["match"]["values"] == {"count": "1", "device": "2"}
    assert data["others"] == [] and data["facts"] is None


def test_cli_unknown_exits_1_with_what_to_paste(cli):
    r = cli("explain", "something odd happened")
    assert r.code == 1
    assert "did not recognise" in r.out and "cudaenv verify" in r.out
    r = cli("explain", "--json", "something odd happened")
    assert r.code == 1 and r.json()["recognised"] is False


def test_cli_all_explains_each_problem(cli):
    both = recorded("err-cuda-oom.txt") + "\n" + recorded("err-cublas-not-initialized.txt")
    r = cli("explain", "--all", both)
    assert r.code == 0
    assert "cuda-oom:" in r.out and "\ncublas-not-initialized:" in r.out


def test_cli_list(cli):
    r = cli("explain", "--list")
    assert r.code == 0
    assert len(r.out.splitlines()) == len(known_ids())
    assert "nccl-timeout" in r.out


def test_cli_reads_a_pasted_traceback_from_stdin(cli_subprocess):
    r = cli_subprocess("explain", "-", input=recorded("err-nccl-error.txt"))
    assert r.code == 0, r
    assert r.out.startswith("nccl-error: NCCL failed")
    assert "NCCL said: unhandled system error." in r.out
    r = cli_subprocess("explain", input=recorded("err-device-side-assert.txt"))
    assert r.code == 0 and "srcIndex < srcSelectDimSize" in r.out


def test_cli_without_text_is_a_usage_error(cli, cli_subprocess):
    r = cli_subprocess("explain", input="")
    assert r.code == 2 and "no error text given" in r.err


def test_cli_probe_reports_a_python_without_torch(cli, tmp_path):
    """--probe runs the info child in the given interpreter; this one (the test venv) may lack torch."""
    import importlib.util

    r = cli("explain", "--probe", "--json", "--python", sys.executable, "RuntimeError: No CUDA GPUs are available",
            env={"PATH": TOOLS})
    assert r.code == 0, r
    data = r.json()
    assert data["facts"]["python"] == sys.executable
    if importlib.util.find_spec("torch") is None:
        assert "No module named 'torch'" in data["facts"]["import_error"]
        assert data["context"][0].startswith("torch does not import")
    else:
        assert data["facts"]["torch"]


def test_cli_probe_with_a_missing_python_is_a_usage_error(cli):
    r = cli("explain", "--probe", "--python", "/nonexistent/python", "invalid device ordinal")
    assert r.code == 2 and "--python /nonexistent/python does not exist" in r.err
