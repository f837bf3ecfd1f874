"""cudaenv explain: every pattern matched by its real recorded text, the table's invariants, the CLI."""

import inspect
import json
import os
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import RECORDED, TOOLS, recorded
from cudaenv.explain.checks import PROVIDES
from cudaenv.explain import classify_all, classify_error, describe, known_ids, probe_context
from cudaenv.render.explain import context_lines, render_match, render_unknown
from cudaenv.core.resources import load_table

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
                assert (name in groups or name[: -len("_cuda")] + "_cuda_int" in groups or name.endswith("_cuda")
                        or name in PROVIDES.get(row.get("check"), ())), (row["id"], name)  # a check's values


WINDOW = 80  # characters: the longest window after a message's literal that may rescan the next occurrence of it


def _windows(items, out):
    """Every bounded or unbounded repeat in a parsed pattern, as (its upper bound, its item), depth first."""
    for op, av in items:
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            out.append((av[1], av[2]))
            _windows(av[2], out)
        elif name == "SUBPATTERN":
            _windows(av[-1], out)
        elif name == "BRANCH":
            for alt in av[1]:
                _windows(alt, out)
        elif name in ("ASSERT", "ASSERT_NOT", "ATOMIC_GROUP"):
            _windows(av[-1] if name != "ATOMIC_GROUP" else av, out)
    return out


def _one_char_matches(item, ch):
    """Whether a one-character item of a parsed pattern accepts ``ch`` (None: not a one-character item)."""
    if len(item) != 1:
        return None
    op, av = item[0]
    name = str(op)
    cats = {"CATEGORY_DIGIT": str.isdigit, "CATEGORY_NOT_DIGIT": lambda c: not c.isdigit(),
            "CATEGORY_WORD": lambda c: c.isalnum() or c == "_", "CATEGORY_NOT_WORD": lambda c: not (c.isalnum() or c == "_"),
            "CATEGORY_SPACE": str.isspace, "CATEGORY_NOT_SPACE": lambda c: not c.isspace()}
    if name == "LITERAL":
        return chr(av).lower() == ch.lower()
    if name == "NOT_LITERAL":
        return chr(av).lower() != ch.lower()
    if name == "ANY":
        return ch != "\n"
    if name == "IN":
        negate, hit = False, False
        for kind, value in av:
            kind = str(kind)
            if kind == "NEGATE":
                negate = True
            elif kind == "LITERAL":
                hit = hit or chr(value).lower() == ch.lower()
            elif kind == "RANGE":
                hit = hit or value[0] <= ord(ch.lower()) <= value[1] or value[0] <= ord(ch.upper()) <= value[1]
            elif kind == "CATEGORY":
                hit = hit or cats[str(value)](ch)
        return hit != negate
    return None


def _accepts(items, ch):
    """Whether any one-character element of a parsed item accepts ``ch`` (an over-approximation of "the item can
    consume ``ch``"); None when the item holds an element this check does not know."""
    found = False
    for op, av in items:
        name = str(op)
        if name in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
            found = found or _one_char_matches([(op, av)], ch)
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            inner = _accepts(av[2], ch)
            if inner is None:
                return None
            found = found or inner
        elif name == "SUBPATTERN":
            inner = _accepts(av[-1], ch)
            if inner is None:
                return None
            found = found or inner
        elif name == "BRANCH":
            for alt in av[1]:
                inner = _accepts(alt, ch)
                if inner is None:
                    return None
                found = found or inner
        elif name in ("AT", "ASSERT", "ASSERT_NOT"):
            continue  # zero-width
        else:
            return None
    return found


def test_no_pattern_rescans_a_long_window_from_every_occurrence_of_its_message():
    """Linear time, proved by structure (the time itself is bench/run.py's ``explain`` figures): a window after a
    message's leading literal (``NCCL error[^\\n]{0,160}?(?P<reason>...)``) that can run over the next occurrence
    of that literal is rescanned from each one, so 1 MB of ``NCCL error`` repeated costs 160 steps per character.
    Such a window is at most WINDOW characters, or tempered (``(?:(?!NCCL error)[^\\n]){0,160}?``): it stops at the
    next occurrence, so each character is scanned from one occurrence only."""
    try:
        from re import _parser as sre_parse
    except ImportError:  # pragma: no cover - Python < 3.11
        import sre_parse
    checked = 0
    for row in load_table("error_patterns")["rows"]:  # as written (the tolerant form adds no window: T.tolerant)
        for pattern in row["patterns"]:
            items = list(sre_parse.parse(pattern, re.IGNORECASE))
            head = ""  # the message's leading literal
            for op, av in items:
                if str(op) != "LITERAL":
                    break
                head += chr(av)
            if len(head) < 3:
                continue
            for upper, item in _windows(items, []):
                if upper <= WINDOW:
                    continue
                item = list(item)
                if item and str(item[0][0]) == "ASSERT_NOT":
                    ahead = "".join(chr(av) if str(op) == "LITERAL" else "\0" for op, av in item[0][1][1])
                    assert ahead.lower() == head.lower(), (row["id"], pattern, "tempered by another literal than %r" % head)
                    checked += 1
                    continue  # tempered: it stops at the next occurrence of its message
                accepts = [_accepts(item, ch) for ch in head]
                assert None not in accepts, (row["id"], pattern, "a long window of an unknown kind")
                assert not all(accepts), (row["id"], pattern, "a window of %s characters runs over %r" % (upper, head))
                checked += 1
    assert checked >= 5  # the long windows of the table were looked at (state-dict keys, the assertion, NCCL's)


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
    m = classify_error(recorded("err-checkpoint-needs-cuda.txt"))  # the is_available() form: its own row (no device number)
    assert m.id == "checkpoint-needs-cuda" and not any("{device}" in a or "cuda:{" in a for a in m.advice)
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
    lines = context_lines(probe_context(m, facts))
    assert "Here torch sees 1 GPU(s): cuda:0." in lines
    assert "CUDA_VISIBLE_DEVICES='3' in this environment." in lines
    assert "Use map_location='cuda:0' here (cuda:2 does not exist)." in lines
    assert context_lines(probe_context(m, None)) == []
    arch = classify_error(recorded("err-gpu-arch-unsupported.txt"))
    lines = context_lines(probe_context(arch, {"torch": "2.7.1+cu128", "cuda": "12.8", "arch_list": ["sm_75", "sm_120"],
                                 "devices": [{"name": "NVIDIA GeForce GTX 1080 Ti", "capability": "6.1"}]}))
    assert "This torch has kernels for: sm_75 sm_120." in lines and "cuda:0 NVIDIA GeForce GTX 1080 Ti is sm_61." in lines


def test_the_probe_context_is_data_and_the_sentences_are_the_renderers():
    """cudaenv.explain.probe_context says what applies (numbers, names, kinds); render.explain.context_lines writes
    the sentences, the very ones the capability wrote before."""
    from cudaenv.explain import ProbeContext

    m = classify_error(recorded("err-checkpoint-device-missing.txt"))
    facts = {"torch": "2.13.0+cu130", "device_count": 1, "cuda_visible_devices": "3", "python": "/venv/bin/python"}
    assert probe_context(m, facts) == ProbeContext(python="/venv/bin/python", device_count=1, visible="3", missing_device=2,
                                                   map_location="cuda:0")
    assert context_lines(probe_context(m, facts)) == ["Here torch sees 1 GPU(s): cuda:0.", "CUDA_VISIBLE_DEVICES='3' in this environment.",
                                       "Use map_location='cuda:0' here (cuda:2 does not exist)."]
    assert context_lines(probe_context(m, dict(facts, device_count=0))) == [
        "Here torch sees 0 GPU(s): no GPU.", "CUDA_VISIBLE_DEVICES='3' in this environment.",
        "Use map_location='cpu' here (cuda:2 does not exist)."]
    arch = classify_error(recorded("err-gpu-arch-unsupported.txt"))
    facts = {"torch": "2.7.1+cu128", "cuda": None, "arch_list": ["sm_75", "sm_120"], "python": "/p/python",
             "devices": [{"name": "NVIDIA GeForce GTX 1080 Ti", "capability": "6.1"}, {"capability": "9.0a"}, "junk"]}
    assert probe_context(arch, facts).gpus == ((0, "NVIDIA GeForce GTX 1080 Ti", "sm_61"), (1, "", "sm_90a"))
    assert context_lines(probe_context(arch, facts)) == ["torch 2.7.1+cu128 in /p/python (built for CUDA none: a CPU build).",
                                          "This torch has kernels for: sm_75 sm_120.",
                                          "cuda:0 NVIDIA GeForce GTX 1080 Ti is sm_61.", "cuda:1  is sm_90a."]
    broken = {"python": None, "import_error": "No module named 'torch'"}
    assert probe_context(arch, broken) == ProbeContext(import_error="No module named 'torch'")
    assert context_lines(probe_context(arch, broken)) == ["torch does not import in this Python: No module named 'torch'"]
    assert probe_context(arch, None) is None and probe_context(arch, {}) is None


def test_describe_gives_the_entry_for_an_id():
    d = describe("torch-cpu-only")
    assert d.title == "this torch is a CPU-only build" and d.doctor_finding
    assert describe("no-such-id") is None


@settings(max_examples=300)
@given(st.text(max_size=3000))
def test_any_text_in_no_exception_out(text):
    for m in classify_all(text):
        render_match(m, 80, context_lines(probe_context(m, {"device_count": 0})), [])
    classify_error(text)


@settings(max_examples=100)
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
    # one entry per id, in the table's order; a title longer than its column goes on (indented) lines of its own
    assert [line.split()[0] for line in r.out.splitlines() if not line.startswith(" ")] == list(known_ids())
    assert "nccl-timeout" in r.out and max(len(line) for line in r.out.splitlines()) <= 80


def test_cli_list_json_is_a_versioned_catalog(cli):
    from cudaenv.explain import ErrorCatalog

    r = cli("explain", "--list", "--json")
    assert r.code == 0
    data = r.json()
    assert list(data) == ["schema_version", "errors"] and data["schema_version"] == 1
    assert [e["id"] for e in data["errors"]] == list(known_ids())
    oom = next(e for e in data["errors"] if e["id"] == "cuda-oom")
    assert oom["title"] and oom["advice"]
    assert ErrorCatalog.from_dict(data).to_dict() == data  # the model reads it back


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


# ------------------------------------------------------------------ hostile and large pastes (issue 12)
def _run_bytes(argv, data, timeout=120, limit_bytes=None):
    """The installed console script fed raw bytes on stdin (optionally under an address-space limit)."""
    import resource
    import subprocess

    def cap():
        if limit_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    exe = str(Path(sys.executable).parent / "cudaenv")
    return subprocess.run([exe, *argv], input=data, capture_output=True, timeout=timeout, env={"PATH": TOOLS},
                          preexec_fn=cap)


def test_stdin_with_an_invalid_utf8_byte_is_still_explained():
    """Issue 12: one byte that is not UTF-8 made `explain -` say "no error text given" (exit 2)."""
    data = b"caf\xe9 log\nRuntimeError: CUDA error: invalid device ordinal\n"
    res = _run_bytes(["explain", "-"], data)
    assert res.returncode == 0, res.stderr
    assert res.stdout.decode().startswith("invalid-device-ordinal:")


def test_file_of_any_encoding_and_a_fifo(tmp_path, cli):
    log = tmp_path / "train.log"
    log.write_bytes("Fehler \u00fcberall\n".encode("latin-1") + b"\xff\xfe RuntimeError: No CUDA GPUs are available\n")
    r = cli("explain", "--file", str(log))
    assert r.code == 0 and r.out.startswith("torch-cuda-unavailable:"), r
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    r = cli("explain", "--file", str(fifo))
    assert r.code == 2 and "FIFO" in r.err
    r = cli("explain", "--file", str(tmp_path / "missing.log"))
    assert r.code == 2 and "cannot read" in r.err


def test_a_50_mb_paste_is_read_bounded_and_its_tail_searched():
    """A 50 MB log with the error on its last line: found (the old reader kept the first 4 MB), said to be cut,
    under a 300 MB address-space limit."""
    data = b"step 1 loss 0.25 " * (50 * 1024 * 1024 // 17) + b"\nRuntimeError: CUDA error: an illegal memory access was encountered\n"
    res = _run_bytes(["explain", "-"], data, limit_bytes=300 * 1024 * 1024)
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout.decode()
    assert "illegal-memory-access:" in out and "cudaenv searched its first and last" in out
    res = _run_bytes(["explain", "--json", "-"], data, limit_bytes=300 * 1024 * 1024)
    got = json.loads(res.stdout)
    assert got["recognised"] and got["cut"]["size"] == len(data)


def test_a_long_log_with_the_error_on_its_last_line_is_found():
    """Issue 14 section 6: a 1.3 MB log (over the searched million characters) with the traceback at its end."""
    text = "epoch 3 batch 17 ok\n" * 65_000 + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert len(text) > 1_300_000
    m = classify_error(text)
    assert m is not None and m.id == "cuda-oom" and dict(m.values)["size"] == "2.00 GiB"


def test_a_message_wrapped_by_the_terminal_is_found_like_the_one_line_form():
    one = "RuntimeError: The NVIDIA driver on your system is too old (found version 12040). Please update"
    two = "RuntimeError: The NVIDIA driver on your system is too old (found version\n12040). Please update"
    assert classify_error(one).id == classify_error(two).id == "driver-too-old-for-torch"
    assert dict(classify_error(two).values)["driver_cuda"] == "12.4"


def test_pasted_strings_are_printed_escaped(cli):
    """An assertion's text and the matched line come from the paste: escape sequences are shown, never obeyed."""
    text = "Indexing.cu:1: Assertion `idx \x1b]0;pwned\x07\x1b[2J< size` failed.\nRuntimeError: CUDA error: device-side assert triggered"
    r = cli("explain", text)
    assert r.code == 0, r
    assert "\x1b" not in r.out and "\x07" not in r.out
    assert "\\x1b]0;pwned\\x07" in r.out


def test_which_ids_get_which_machine_context_is_table_data():
    from cudaenv.explain import CONTEXTS, context_kinds

    rows = load_table("error_patterns")["rows"]
    for row in rows:
        assert set(row.get("context", [])) <= set(CONTEXTS), row["id"]
    assert context_kinds("gpu-arch-unsupported") == ("torch_build", "arch")
    assert "devices" in context_kinds("invalid-device-ordinal") and context_kinds("cuda-oom") == ()
    m = classify_error(recorded("err-checkpoint-device-missing.txt"))
    huge = context_lines(probe_context(m, {"torch": "2.13.0", "device_count": "9" * 5000}))  # a count that is no number: no crash
    assert not any("map_location" in line for line in huge)


def test_a_checkpoint_on_a_machine_without_cuda_is_not_told_to_map_to_cuda():
    """Issue 14 section 6: for "... but torch.cuda.is_available() is False" the first advice was map_location="cuda:0",
    which raises the very same error there. The two forms have different explanations and fixes."""
    unavailable = classify_error(recorded("err-checkpoint-needs-cuda.txt"))
    assert unavailable.id == "checkpoint-needs-cuda"
    assert 'map_location="cpu"' in unavailable.advice[0] and not any('"cuda:0"' in a for a in unavailable.advice)
    assert "is_available() is False" in unavailable.explanation and "cudaenv doctor" in " ".join(unavailable.advice)
    count = classify_error(recorded("err-checkpoint-device-missing.txt"))
    assert count.id == "checkpoint-device-missing" and '"cuda:0"' in count.advice[0]
    assert count.explanation != unavailable.explanation


def test_advice_wraps_between_shell_words_only(cli):
    """Issue 14 section 6: an advice line wrapped inside `python -c "..."` broke when pasted (IndentationError)."""
    text = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    for columns in ("80", "60", "40"):
        r = cli("explain", text, env={"PATH": TOOLS, "COLUMNS": columns})
        assert r.code == 0
        span = '"import torch; print(torch.cuda.get_device_capability(), torch.cuda.get_arch_list())"'  # one shell word
        assert any(span in line for line in r.out.splitlines()), r.out
        for line in r.out.splitlines():
            assert len(line) <= int(columns) or '"' in line or "/" in line, (columns, line)
    r = cli("explain", recorded("err-driver-not-loaded.txt"), env={"PATH": TOOLS, "COLUMNS": "40"})
    assert any("'nvidia|nouveau'" in line for line in r.out.splitlines()), r.out


def test_probe_is_bounded_by_the_users_timeout_and_names_a_hang_at_import(cli, fake_bin):
    """Issue 12: `explain --probe --timeout 2` with a Python that hangs at import waited 30 s."""
    python = fake_bin.command("python3", sleep=1000)
    r = cli("explain", "--probe", "--json", "--timeout", "1", "--python", str(python), "RuntimeError: No CUDA GPUs are available",
            env={"PATH": fake_bin.env_path})
    assert r.code == 0, r
    facts = r.json()["facts"]
    assert re.search(r"hung: no answer within (1|0\.9\d*) s", facts["import_error"]), facts  # the deadline: 1 s, less what ran before


def test_common_errors_cudaenv_could_not_name_before():
    """Issue 14 section 6: CUDA_HOME unset, an nvJitLink symbol mixup, docker without the GPU runtime, and
    "no CUDA-capable device is detected" were "not recognised"."""
    m = classify_error(recorded("err-cuda-library-version-mixup.txt"))
    assert m.id == "cuda-library-version-mixup"
    assert "The symbol __nvJitLinkAddData_12_1 is missing from the libnvJitLink.so.12 that was loaded." in m.details
    assert any("LD_LIBRARY_PATH" in a for a in m.advice)
    assert classify_error(recorded("err-cuda-home-not-set.txt")).advice[0].startswith("cudaenv list")
    assert any("nvidia-ctk runtime configure" in a for a in classify_error(recorded("err-docker-gpu-runtime-missing-2.txt")).advice)
    assert classify_error("CUDA error: no CUDA-capable device is detected").id == "torch-cuda-unavailable"


@settings(max_examples=150)
@given(st.sampled_from(ERR_FILES), st.integers(min_value=0, max_value=2**32), st.text(max_size=100))
def test_the_literal_prefilter_never_changes_a_result(monkeypatch_name, seed, noise):
    """explain skips a pattern whose literal is not in the (ASCII) text: a 1 MB log is classified in about 0.1 s
    instead of 2.5 s. Same answers with and without it, in any letter case."""
    import random

    import cudaenv.explain.table as explain

    rng = random.Random(seed)
    text = "".join(c.upper() if rng.random() < 0.3 else c for c in recorded(monkeypatch_name)) + "\n" + noise
    fast = [(m.id, m.matched, m.values) for m in classify_all(text)]
    real = explain.lowered
    explain.lowered = lambda _text: None  # no pre-filter: every pattern searched
    try:
        slow = [(m.id, m.matched, m.values) for m in classify_all(text)]
    finally:
        explain.lowered = real
    assert fast == slow
    for row in explain.rows():
        for pattern, needle, literals in zip(row.patterns, row.needles, row.prefilter):
            m = pattern.search(text)
            if m is not None and needle and text.isascii():
                assert needle in m.group(0).lower(), (row.id, pattern.pattern, needle)
            if m is not None and literals and text.isascii():
                assert any(n in explain.squeezed(m.group(0).lower()) for n in literals), (row.id, pattern.pattern, literals)


def test_an_alternation_without_a_needle_is_prefiltered_by_one_literal_per_alternative():
    import cudaenv.explain.table as explain

    assert explain.needle("(?P<is_rocm>\\bHIP error\\b|No HIP GPUs are available)") == ""
    assert explain.prefilter("(?P<is_rocm>\\bHIP error\\b|No HIP GPUs are available)") == ("hip error", "no hip gpus are available")
    assert explain.prefilter("CUDA out of memory") == ("cuda out of memory",)
    assert explain.prefilter("(?:ab|cd)x") == ()  # an alternative without a literal: no prefilter
    rows = {row.id: row for row in explain.rows()}
    assert all(rows["not-cuda"].prefilter), rows["not-cuda"].prefilter  # every not-cuda pattern is skipped on other text
    assert classify_all("x\n" * 1000) == []
