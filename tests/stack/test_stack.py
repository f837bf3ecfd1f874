"""Issue 31: `cudaenv lock` (the stack file, TOML written by cudaenv's own writer) and `cudaenv doctor --against FILE`
on the suite's scenario machines; the stack file round-trips, and the small TOML reader agrees with tomllib."""

import json
import shutil
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import assert_linear
from machine import A10G, ARCH_CU121, a10g_535

from cudaenv.model.reports import DoctorReport
from cudaenv.stack.lock import StackFileError, parse_stack, stack_toml
from cudaenv.stack.records import Stack
from cudaenv.stack.tomlfile import TomlError, parse_toml, toml_text


def cudaenv(machine, *args):
    """`cudaenv ARGS` on the scenario machine (its root, its fake nvidia-smi, its interpreter), as machine.doctor runs."""
    env = dict(machine.env)
    env["PATH"] = ":".join(machine.path_in_root + [machine.bin.env_path])
    env["CUDAENV_ROOT"] = str(machine.root.path)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return machine.cli(*args, "--python", machine.python, env=env)


def a10g(machine, torch="2.5.1+cu121", cuda="12.1"):
    if machine.site is not None:
        shutil.rmtree(machine.site)
    return a10g_535(machine).torch(torch, cuda, A10G, ARCH_CU121)


def test_lock_then_against_on_the_same_machine_holds(machine, tmp_path):
    a10g(machine)
    path = str(tmp_path / "cuda-stack.toml")
    r = cudaenv(machine, "lock", path)
    assert r.code == 0 and "torch 2.5.1+cu121 from https://download.pytorch.org/whl/cu121" in r.out, r
    stack = parse_stack(open(path).read())
    assert stack.torch == "2.5.1+cu121" and stack.torch_index == "https://download.pytorch.org/whl/cu121"
    assert stack.cuda_major == 12 and stack.gpu_archs == ("8.6",) and stack.seen_driver == "535.247.01"
    assert stack.driver_min  # the floor of torch's CUDA 12.1 (data/cuda_drivers.json)
    r = cudaenv(machine, "doctor", "--against", path)
    assert "This machine holds the stack" in r.out, r.out
    data = cudaenv(machine, "doctor", "--json", "--against", path)
    report = json.loads(data.out)
    assert report["against"]["differences"] == [] and list(report)[-1] == "against"
    assert DoctorReport.from_dict(report).against.file == path


def test_another_torch_build_is_one_difference_with_recommends_install_line(machine, tmp_path):
    a10g(machine)
    path = str(tmp_path / "stack.toml")
    assert cudaenv(machine, "lock", path).code == 0
    a10g(machine, torch="2.5.1+cu124", cuda="12.4")
    r = cudaenv(machine, "doctor", "--json", "--against", path)
    assert r.code == 1, r
    diffs = json.loads(r.out)["against"]["differences"]
    assert [(d["what"], d["wanted"], d["have"]) for d in diffs] == [("torch", "2.5.1+cu121", "2.5.1+cu124")]
    assert diffs[0]["commands"] == ["%s -m pip install torch==2.5.1+cu121 --index-url https://download.pytorch.org/whl/cu121"
                                    % machine.python]
    text = cudaenv(machine, "doctor", "--against", path)
    assert text.code == 1 and "1 difference from the stack" in text.out and "another torch build" in text.out


def test_driver_floor_archs_and_toolkit_differences(machine, tmp_path):
    a10g(machine)
    stack = Stack(driver_min="580.65.06", gpu_archs=("8.0",), cuda_major=13, toolkit="12.4.131", toolkit_source="runfile")
    path = tmp_path / "stack.toml"
    path.write_text(stack_toml(stack))
    r = cudaenv(machine, "doctor", "--json", "--against", str(path))
    assert r.code == 1
    diffs = {d["what"]: d for d in json.loads(r.out)["against"]["differences"]}
    assert set(diffs) == {"driver", "gpu-arch", "cuda-major", "toolkit"}
    assert (diffs["driver"]["wanted"], diffs["driver"]["have"]) == ("580.65.06", "535.247.01")
    assert diffs["gpu-arch"]["have"] == "GPU 0: 8.6" and diffs["cuda-major"]["have"] == "12"
    assert diffs["toolkit"]["commands"] == ["cudaenv install 12.4", "cudaenv use 12.4"]  # not installed here
    machine.toolkit("12.4.131")
    diffs = {d["what"]: d for d in json.loads(cudaenv(machine, "doctor", "--json", "--against", str(path)).out)["against"]["differences"]}
    assert diffs["toolkit"]["commands"] == ["cudaenv use 12.4"]  # installed, not active: switch to it


def test_a_bad_stack_file_is_a_usage_error(machine, tmp_path):
    a10g(machine)
    cases = {"notoml.toml": "schema = [1,\n", "newer.toml": "schema = 2\n", "nolock.toml": "[tool.uv]\nx = 1\n",
             "types.toml": "schema = 1\n[require]\ntorch = 3\n"}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        r = cudaenv(machine, "doctor", "--against", str(tmp_path / name))
        assert r.code == 2 and "cudaenv lock" in r.err, (name, r)
    r = cudaenv(machine, "doctor", "--against", str(tmp_path / "missing.toml"))
    assert r.code == 2


def test_hostile_values_are_escaped(machine, tmp_path):
    a10g(machine)
    path = tmp_path / "stack.toml"
    path.write_text(stack_toml(Stack(torch="2.5.1\x1b[31m", host="evil\x07", driver_min="999.1\x1b]0;x")))
    for fmt in ((), ("--format", "markdown")):
        r = cudaenv(machine, "doctor", "--against", str(path), *fmt)
        assert r.code == 1 and "\x1b" not in r.out and "\x07" not in r.out


# ------------------------------------------------------------------ the stack file and its TOML
_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
_strs = st.lists(_text, max_size=4).map(tuple)
_opt = st.none() | _text
STACKS = st.builds(Stack, generated_by=_opt, generated_at=_opt, host=_opt, driver_min=_opt, gpu_archs=_strs,
                   cuda_major=st.none() | st.integers(1, 999), torch=_opt, torch_index=_opt, companions=_strs,
                   wheels=_strs, toolkit=_opt, toolkit_source=_opt, seen_driver=_opt, seen_gpus=_strs,
                   seen_system=_opt, seen_python=_opt, seen_installer=_opt)


@settings(max_examples=200)
@given(stack=STACKS)
def test_property_a_stack_file_round_trips(stack):
    text = stack_toml(stack)
    assert parse_stack(text) == stack
    assert parse_toml(text) == _tomllib().loads(text)  # the small reader (Python 3.9/3.10) reads it as tomllib does


def _tomllib():
    if sys.version_info < (3, 11):
        pytest.skip("tomllib is Python 3.11+")
    import tomllib

    return tomllib


def test_the_small_reader_reads_toml_written_by_hand():
    text = "# c\nschema = 1 # one\n'host' = 'a\\b'\n[require]\n\"gpu_archs\" = [ \"8.0\" , '9.0', ]\ncuda_major = +1_2\nx = false\n"
    assert parse_toml(text) == _tomllib().loads(text) == {
        "schema": 1, "host": "a\\b", "require": {"gpu_archs": ["8.0", "9.0"], "cuda_major": 12, "x": False}}
    for bad in ("a = 1\na = 2\n", "[t]\n[t]\n", "a = \"x\n", "a = [1, [2]]\n", "a = 1 2\n", "a = 01\n", "= 1\n",
                "a = \"\\ud800\"\n", "a = 1.5\n"):
        with pytest.raises(TomlError):
            parse_toml(bad)


def test_toml_text_writes_keys_that_need_quotes_and_leaves_none_out():
    text = toml_text([("a b", "x\"\n\x01"), ("none", None)], [("t", [("k", ["1", "2"]), ("ok", True)])])
    assert parse_toml(text) == _tomllib().loads(text) == {"a b": "x\"\n\x01", "t": {"k": ["1", "2"], "ok": True}}


@settings(max_examples=300)
@given(text=st.text(max_size=200))
def test_property_the_small_reader_takes_any_text(text):
    try:
        doc = parse_toml(text)
    except TomlError:
        return
    assert isinstance(doc, dict)


@settings(max_examples=100)
@given(text=st.text(max_size=200))
def test_property_parse_stack_takes_any_text(text):
    try:
        parse_stack(text)
    except StackFileError as exc:
        assert str(exc)


def test_the_small_reader_is_linear_on_long_lines():
    assert_linear(parse_toml, unit="\"x\", ", head="a = [", tail="]\n")  # one long array
    assert_linear(parse_toml, unit="ab\\t", head="a = \"", tail="\"\n")  # one long string with escapes
    assert_linear(parse_toml, unit="# a comment\n\n", tail="k = 'v'\n")  # many lines


def test_snippets_carry_the_choice_into_the_projects_files(machine, tmp_path):
    a10g(machine)
    r = cudaenv(machine, "lock", str(tmp_path / "s.toml"), "--snippets")
    assert r.code == 0, r
    req = r.out.split("# ---- requirements.txt (pip, uv pip)\n", 1)[1].split("\n\n", 1)[0]
    assert req.splitlines()[1:] == ["--extra-index-url https://download.pytorch.org/whl/cu121", "torch==2.5.1+cu121"]
    assert 'url = "https://download.pytorch.org/whl/cu121"' in r.out and 'torch = [{ index = "pytorch-cu121" }]' in r.out
    assert r.out.rstrip().endswith('[system-requirements]\ncuda = "12"')
