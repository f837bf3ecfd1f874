"""Pasted tool outputs are parsed only when the paste can hold them (issue 35): :func:`cudaenv.pasted.may_hold` looks
for a literal each parser's answer needs, and a log without any is handed to no parser. Counted work, never time;
the answers are the same as with every parser run."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import TESTS
from cudaenv import pasted
from cudaenv.parse.collect_env import _KEYS
from cudaenv.pasted import TOOL_OUTPUTS, may_hold, read_facts

TOOL_FILES = sorted(p for d in ("corpus/tools", "corpus/explain", "recorded") for p in (TESTS / d).rglob("*")
                    if p.is_file() and p.stat().st_size < 400_000)
TEXTS = {p.relative_to(TESTS).as_posix(): p.read_bytes().decode("utf-8", "replace") for p in TOOL_FILES}
# the bench's 10 MB log (bench/run.py), its line repeated: a training log that holds no tool output
LOG_LINE = "2024-05-01 12:00:01,123 - train - INFO - [rank0]: step 17 loss 0.2512 \x1b[32mok\x1b[0m 45%|####  |\r\n"
LOG = LOG_LINE * 20_000 + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"

# every parser read_facts may call: module, name
PARSERS = (("cudaenv.parse.nvidia_smi", "parse_banner"), ("cudaenv.parse.nvidia_smi", "parse_query_log"),
           ("cudaenv.parse.nvidia_smi", "parse_list"), ("cudaenv.parse.nvidia_smi", "is_query_header"),
           ("cudaenv.parse.nvidia_smi", "parse_query_csv"), ("cudaenv.parse.nvcc", "find_nvcc_version"),
           ("cudaenv.parse.collect_env", "parse_collect_env"), ("cudaenv.parse.proc", "parse_proc_driver_version"),
           ("cudaenv.parse.device_query", "parse_device_query"), ("cudaenv.parse.lspci", "parse_lspci"),
           ("cudaenv.parse.kernel_log", "parse_xid_log"), ("cudaenv.parse.printed", "parse_kernel_log"),
           ("cudaenv.parse.printed", "parse_printed_torch"), ("cudaenv.parse.smi_conditions", "parse_smi_conditions"))


@pytest.fixture
def handed(monkeypatch):
    """{parser name: lines of text it was handed}, for every parser read_facts calls."""
    import importlib

    seen = {}

    def counting(name, real):
        def wrapper(text, *args, **kwargs):
            body = text if isinstance(text, str) else ""
            seen[name] = seen.get(name, 0) + (body.count("\n") + 1 if body else 0)
            return real(text, *args, **kwargs)
        return wrapper

    for module, name in PARSERS:
        mod = importlib.import_module(module)
        monkeypatch.setattr(mod, name, counting(name, getattr(mod, name)))
    return seen


def _every_parser(monkeypatch):
    monkeypatch.setattr(pasted, "may_hold", lambda body: frozenset(TOOL_OUTPUTS))


def test_a_log_without_tool_output_is_handed_to_no_parser(handed):
    """Before: each of a dozen parsers split and read all 20,001 lines (a 10 MB log's searched million characters:
    about 10,500 lines, 12 times); now none."""
    assert read_facts(LOG) is None
    assert may_hold(LOG) == frozenset()
    assert sum(handed.values()) == 0, handed


def test_without_the_markers_every_parser_reads_the_log(handed, monkeypatch):
    """The count above can fail: with every parser run, the same log is handed to each, whole."""
    _every_parser(monkeypatch)
    assert read_facts(LOG) is None
    assert handed["parse_banner"] == LOG.count("\n") + 1 and len(handed) >= 10, handed


def test_a_tool_output_in_a_log_is_still_read(handed):
    smi = TEXTS["recorded/diag-banner-535-a10g.txt"].split("# ---\n", 1)[-1]
    facts = read_facts(LOG_LINE * 200 + smi + LOG_LINE * 200)
    assert facts is not None and "nvidia-smi" in facts.sources and facts.driver_version
    assert handed["parse_banner"] > 400 and "parse_collect_env" not in handed


def test_the_collect_env_keys_are_the_parsers():
    """may_hold's collect_env literals are the keys of parse.collect_env whose fields make its answer."""
    needed = {"torch", "torch_cuda", "cuda_available", "gpus", "runtime", "cudnn"}
    assert set(pasted._COLLECT_ENV_KEYS) == {k for k, v in _KEYS.items() if v in needed}


def _same(text, monkeypatch):
    fast = read_facts(text)
    with monkeypatch.context() as m:
        _every_parser(m)
        slow = read_facts(text)
    assert fast == slow, text[:300]


def test_every_recorded_output_reads_the_same_with_every_parser_run(monkeypatch):
    assert len(TEXTS) > 300
    for name in sorted(TEXTS):
        _same(TEXTS[name], monkeypatch)


@settings(max_examples=200)
@given(st.lists(st.sampled_from(sorted(TEXTS)), min_size=1, max_size=3), st.integers(0, 2**32), st.text(max_size=200))
def test_pieces_of_outputs_read_the_same_with_every_parser_run(names, seed, noise):
    """Pieces of recorded outputs (cut anywhere, lines dropped, letters' case flipped, noise between) give the same
    facts with the markers as with every parser run."""
    rng = random.Random(seed)
    parts = []
    for name in names:
        lines = TEXTS[name].splitlines(keepends=True)
        a = rng.randrange(len(lines) + 1)
        b = rng.randrange(a, len(lines) + 1)
        piece = [ln for ln in lines[a:b] if rng.random() > 0.1]
        if rng.random() < 0.3:
            piece = [ln.swapcase() if rng.random() < 0.2 else ln for ln in piece]
        parts.append("".join(piece))
        parts.append(noise)
    with pytest.MonkeyPatch.context() as mp:
        _same("".join(parts), mp)


# ------------------------------------------------------------------ this machine's context: no child without a GPU
def test_no_kernel_image_on_a_machine_without_a_gpu_runs_no_python(fake_root, tmp_path):
    """Before, the static torch probe ran the user's Python (a child process, most of a 2-line paste's time) and
    context_of dropped what it said: without a GPU the context is "no GPU" alone. Now nothing runs."""
    from cudaenv.pasted.context import machine_context

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ran = tmp_path / "ran"
    python = bin_dir / "python3"
    python.write_text("#!/bin/sh\necho python >> %s\necho '{}'\n" % ran)
    python.chmod(0o755)
    host = fake_root.host(path=str(bin_dir))
    runs = []
    real = host.run

    def counting(argv, *args, **kwargs):
        runs.append(list(argv))
        return real(argv, *args, **kwargs)

    host.run = counting
    text = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    found = machine_context(host, text, ["gpu-arch-unsupported"])
    assert found is not None and found.kinds == {"arch"} and found.no_gpu == "no-smi" and found.torch is None
    assert runs == [] and not ran.exists()


def test_device_numbers_are_looked_for_only_where_cuda_colon_is(monkeypatch):
    """mentioned_devices tries its pattern only where ``cuda:`` starts (before: a regular-expression scan of the last
    million characters, a word-boundary test at each); the numbers found are the same."""
    import re

    from cudaenv.pasted import context as C

    tries = []
    real = C._CUDA_N

    class Counting:
        def match(self, text, pos=0):
            tries.append(pos)
            return real.match(text, pos)

        def finditer(self, text):
            tries.append(-1)
            return real.finditer(text)

    monkeypatch.setattr(C, "_CUDA_N", Counting())
    assert C.mentioned_devices(LOG) == () and tries == []
    text = LOG_LINE * 50 + "x.to('cuda:2') then xcuda:7 and cuda:3, cuda:10000 cuda:0\n" + LOG_LINE
    assert C.mentioned_devices(text) == tuple(sorted({int(m.group(1)) for m in real.finditer(text)})) == (0, 2, 3)
    assert len(tries) == 5 and -1 not in tries
    assert re.compile(r"\bcuda").match("xcuda", 1) is None  # the boundary before the match is seen (pos, not a slice)
