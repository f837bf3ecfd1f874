"""cudaenv explain's root cause (issue 14 sections 1, 3 and 6): ranked candidates, confidence, messy pastes."""

import io
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import assert_linear, count_work, recorded
from cudaenv.explain import classify_all, classify_error, probe_context, read_paste
from cudaenv.explain import rank as R
from cudaenv.explain import table as T
from cudaenv.explain.normalize import lines_of, normalize
from cudaenv.render.explain import context_lines, render_match
from cudaenv.core.resources import load_table

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB"
ASYNC = ("CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
         "incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable "
         "device-side assertions.")


def _table(monkeypatch, raw_rows):
    """The ranking rules run on a table of these rows (the rules are the subject, not the shipped rows)."""
    rows = tuple(T.Row(id=r["id"], patterns=tuple(re.compile(p, re.IGNORECASE) for p in r["patterns"]),
                       needles=tuple(T.needle(p) for p in r["patterns"]), title=r["id"], explanation="e", details=(),
                       advice=("a",), source=None) for r in raw_rows)
    monkeypatch.setattr(T, "rows", lambda: rows)


# ------------------------------------------------------------------ the ranking rules
def test_the_rules_are_data_with_a_source_each():
    table = load_table("explain_rules")
    assert table["description"] and table["sources"]
    kinds = {row["kind"] for row in table["rows"]}
    assert {"boilerplate", "chain", "wrapper", "context", "platform", "variant"} <= kinds
    for row in table["rows"]:
        assert row["source"] in table["sources"], row
        for p in [row.get("pattern")] + list(row.get("patterns", [])):
            if p:
                re.compile(p)
    ids = {r["id"] for r in load_table("error_patterns")["rows"]}
    for row in table["rows"]:
        if row["kind"] == "variant":
            assert row["id"] in ids and row["advice"], row


def test_boilerplate_never_outranks_the_error_it_sits_under(monkeypatch):
    # a row that matches the sentence torch appends comes first in the table: still not the cause
    _table(monkeypatch, [{"id": "launch-blocking", "patterns": [r"consider passing CUDA_LAUNCH_BLOCKING=1"]},
                         {"id": "illegal-memory-access", "patterns": ["an illegal memory access was encountered"]}])
    text = "RuntimeError: CUDA error: an illegal memory access was encountered\n" + ASYNC
    found = classify_all(text)
    assert [m.id for m in found] == ["illegal-memory-access", "launch-blocking"]
    assert found[0].confidence == "high" and found[1].confidence == "low"
    assert ("boilerplate", "") in found[1].why
    one_line = " ".join(text.split("\n"))  # the same pasted as one line (a CLI argument)
    assert classify_error(one_line).id == "illegal-memory-access"


def test_in_a_chained_traceback_the_first_raised_error_is_the_cause(monkeypatch):
    _table(monkeypatch, [{"id": "cublas-not-initialized", "patterns": ["CUBLAS_STATUS_NOT_INITIALIZED"]},
                         {"id": "cuda-oom", "patterns": ["CUDA out of memory"]}])
    for sep in ("During handling of the above exception, another exception occurred:",
                "The above exception was the direct cause of the following exception:"):
        text = "Traceback (most recent call last):\n  File \"a.py\", line 3\n    x()\n%s\n\n%s\nTraceback (most recent call last):\n" \
               "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`" % (OOM, sep)
        found = classify_all(text)
        assert [m.id for m in found] == ["cuda-oom", "cublas-not-initialized"], sep
        assert found[0].line == 4 and ("chained", "") in found[1].why
    # no separator: the table's order decides, as before
    assert classify_error(OOM + "\nRuntimeError: CUBLAS_STATUS_NOT_INITIALIZED").id == "cublas-not-initialized"


def test_a_loader_message_names_the_library_really_missing(monkeypatch):
    text = ("Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file: No such "
            "file or directory\nPlease make sure libcudnn_cnn_infer.so.8 is in your library path!\nAborted (core dumped)")
    m = classify_error(text)  # the shipped table
    assert m.id == "cuda-library-missing" and dict(m.values)["library"] == "libcuda.so"
    assert m.variant == "driver-library" and "driver" in m.title
    assert not any("cudnn" in a.lower() for a in m.advice)
    # a row naming the wanted library, first in the table, ranks after the one naming the missing library
    _table(monkeypatch, [{"id": "cudnn-missing", "patterns": [r"Could not load library libcudnn\w*"]},
                         {"id": "cuda-library-missing", "patterns": [r"libcuda\.so: cannot open shared object file"]}])
    found = classify_all(text)
    assert [x.id for x in found] == ["cuda-library-missing", "cudnn-missing"]
    assert found[1].confidence == "medium" and ("wrapper", "") in found[1].why
    # the same cuDNN message naming cuDNN's own library: cuDNN is what is missing
    same = "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object file"
    _table(monkeypatch, [{"id": "cudnn-missing", "patterns": [r"libcudnn\w*\.so\.\d: cannot open shared object file"]},
                         {"id": "driver-library", "patterns": [r"libcuda\.so: cannot open"]}])
    assert classify_error(same).id == "cudnn-missing"


def test_a_wrapper_message_is_ranked_by_what_is_under_it(monkeypatch):
    _table(monkeypatch, [{"id": "state-dict-mismatch", "patterns": [r"Error\(s\) in loading state_dict for \w+"]},
                         {"id": "state-dict-prefix", "patterns": [r'Missing key\(s\) in state_dict: "module\.']}])
    text = ('RuntimeError: Error(s) in loading state_dict for DataParallel:\n\tMissing key(s) in state_dict: "module.conv1.weight", '
            '"module.conv1.bias".\n\tUnexpected key(s) in state_dict: "conv1.weight", "conv1.bias".')
    found = classify_all(text)
    assert [m.id for m in found] == ["state-dict-prefix", "state-dict-mismatch"]
    assert found[0].confidence == "high" and found[1].confidence == "medium"
    assert classify_error(text.split("\n")[0]).id == "state-dict-mismatch"  # the wrapper alone: it is what there is


def test_a_row_with_evidence_beyond_the_wrapper_is_not_wrapped(monkeypatch):
    """A row whose first pattern is the wrapper line but another pattern reads the lists under it (the state_dict rows
    and their checks) ranks by those lists: it is not 'inside the wrapper'."""
    _table(monkeypatch, [{"id": "header-only", "patterns": [r"Error\(s\) in loading state_dict for \w+"]},
                         {"id": "reads-the-lists", "patterns": [r"Error\(s\) in loading state_dict for \w+", r"Missing key\(s\) in state_dict"]}])
    text = 'RuntimeError: Error(s) in loading state_dict for VGG:\n\tMissing key(s) in state_dict: "features.0.weight".'
    found = classify_all(text)
    assert [(m.id, m.confidence) for m in found] == [("reads-the-lists", "high"), ("header-only", "medium")]


def test_a_prompt_line_is_context_only_up_to_the_output_glued_after_it():
    text = ("(base) lg@lg-robot:~/web_project$ tar -xvf cuda-header.tar.gz tar: This does not look like a tar archive "
            "gzip: stdin: unexpected end of file tar: Child returned status 1")
    for m in classify_all(text):
        assert m.confidence != "low", m
    assert classify_error("$ grep -n 'invalid device ordinal' train.log").confidence == "low"  # the command itself


def test_a_compilers_source_excerpt_of_an_error_directive_is_the_message():
    m = classify_error("  132 | #error -- unsupported GNU version! gcc versions later than 12 are not supported!")
    assert m.id == "nvcc-host-compiler-unsupported" and m.confidence == "high"
    assert classify_error("  12 |     x = 'CUDA out of memory. Tried to allocate 2 GiB'").confidence == "low"


def test_a_match_in_a_source_excerpt_or_a_pip_line_is_low_and_the_real_error_line_wins():
    text = ('Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
            '    raise AssertionError("Torch not compiled with CUDA enabled")\nAssertionError: Torch not compiled with CUDA enabled')
    m = classify_error(text)
    assert m.id == "torch-cpu-only" and m.line == 4 and m.confidence == "high"
    only_source = 'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n    except torch.OutOfMemoryError:\nKeyError: 3'
    m = classify_error(only_source)
    assert m is None or m.confidence == "low"


def test_confidence_levels():
    assert classify_error(recorded("err-cuda-oom.txt")).confidence == "high"
    assert classify_error("we have seen EADDRINUSE before on this box").confidence == "medium"  # short, not an error line
    assert classify_error("OSError: [Errno 98] EADDRINUSE").confidence == "high"
    assert classify_error("import torch; torch.cuda.OutOfMemoryError").confidence == "low"  # Python code


# ------------------------------------------------------------------ section 3: messy pastes
MESSY = [
    ("> **RuntimeError:** CUDA error: invalid device ordinal", "invalid-device-ordinal"),
    ("\x1b[31mRuntimeError: CUDA error: no kernel image is available for execution on the device\x1b[0m", "gpu-arch-unsupported"),
    ("[rank0]: RuntimeError: The NVIDIA driver on your system is too old (found version\n[rank0]: 11040). Please update", "driver-too-old-for-torch"),
    ("2024-05-01 12:34:56.789 | ERROR    | __main__:<module>:5 - torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB", "cuda-oom"),
    ("E0501 12:34:56.123456 140 ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE)", "nccl-timeout"),
    ("[12:00:01] ERROR    RuntimeError: No CUDA GPUs are available                 train.py:12", "torch-cuda-unavailable"),
    ("运行时报错：RuntimeError：CUDA error：out of memory。请问怎么解决？", "cuda-oom"),
    ("ModuleNotFoundError: No module named \u201ctorch\u201d", "torch-missing"),
    ("100%|\u2588\u2588\u2588| 10/10 [00:01<00:00]\r 45%|\u2588   | 9/20 RuntimeError: CUDA error: an illegal memory access was encountered\r\n", "illegal-memory-access"),
    ("RuntimeError:  CUDA  error:   device-side assert   triggered", "device-side-assert"),
    ("```\nAssertionError: Torch not compiled with CUDA enabled\n```", "torch-cpu-only"),
    ("2024-05-01 12:34:56,789 - train - ERROR - RuntimeError: CUDA error: invalid device ordinal", "invalid-device-ordinal"),
    ("C:\\Users\\me\\miniconda3\\lib\\site-packages\\torch\\cuda\\__init__.py:1 \uff08\u8b66\u544a\uff09 RuntimeError: Found no NVIDIA driver on your system", "no-driver"),
]


@pytest.mark.parametrize("text, error_id", MESSY, ids=[e for _, e in MESSY])
def test_messy_pastes_are_normalized_before_matching(text, error_id):
    m = classify_error(text)
    assert m is not None and m.id == error_id, (text, m)
    assert m.matched, m  # the evidence is what was pasted: the text itself, or each of its lines
    assert m.matched in text.replace("\r\n", "\n").replace("\r", "\n") or all(
        line.strip() in text for line in m.matched.split("\n")), m.matched


def test_the_evidence_is_the_original_text_where_normalizing_was_needed():
    m = classify_error("RuntimeError: CUDA out of memory\u3002 Tried to allocate 2.00 GiB")
    assert m.id == "cuda-oom" and "\u3002" in m.matched
    m = classify_error("[rank3]: RuntimeError: CUDA error: invalid device ordinal")
    assert m.matched == "invalid device ordinal"


def test_a_message_wrapped_by_a_terminal_in_the_middle_of_a_word():
    line = "RuntimeError: The NVIDIA driver on your system is too old (found version 12040). Please update your GPU driver"
    for width in (60, 72, 80):
        text = "\n".join(line[i:i + width] for i in range(0, len(line), width))
        m = classify_error(text)
        assert m is not None and m.id == "driver-too-old-for-torch", width
        assert dict(m.values)["driver_cuda"] == "12.4"


RETYPED = [  # re-typed by hand: a blank between two words is missing (the pattern has it)
    ("RuntimeError: Attempting todeserialize object on a CUDA device but torch.cuda.is_available() is False.",
     "checkpoint-needs-cuda"),
    ("RuntimeError: CUDA error: no kernel imageis available for execution on the device", "gpu-arch-unsupported"),
    ("ImportError: libcudart.so.12: cannot open sharedobject file: No such file or directory", "libcudart-missing"),
    ("RuntimeError: CUDA error: invaliddevice ordinal", "invalid-device-ordinal"),
    ("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandledsystem error, NCCL version 2.18.1",
     "nccl-error"),
]


@pytest.mark.parametrize("text, error_id", RETYPED, ids=[e for _, e in RETYPED])
def test_a_retyped_message_with_a_missing_blank_is_found(text, error_id):
    m = classify_error(text)
    assert m is not None and m.id == error_id and m.confidence == "high", (text, m)
    assert m.matched in text  # the evidence is what was typed


def test_only_a_blank_between_two_plain_letters_may_be_missing():
    assert T.tolerant("Attempting to deserialize") == "Attempting ?to ?deserialize"
    assert T.tolerant("torch\\.cuda\\.is_available\\(\\) is False") == "torch\\.cuda\\.is_available\\(\\) is ?False"
    for kept in ("\\d+ \\d+", "[a b] c", "a +b", "a b?", "a b{2}", "x\\b y", "(?P<a>x) y", "a [^ ]"):
        assert T.tolerant(kept) == kept, kept  # next to a class, an escape or a quantifier: unchanged
    raw = load_table("error_patterns")["rows"]
    assert [[p.pattern for p in row.patterns] for row in T.rows()] == [[T.tolerant(p) for p in r["patterns"]] for r in raw]
    needs = [row for row in T.rows() if row.id == "checkpoint-needs-cuda"][0]
    assert needs.needles[0] and T.squeezed(needs.needles[0]) in T.squeezed(RETYPED[0][0].lower())  # still prefiltered


def test_normalizing_keeps_the_line_structure():
    text = "a\r\nb\rc\n\x1b[2J> d\n**e**"
    assert len(normalize(text)) == len(lines_of(text)) == 5


# ------------------------------------------------------------------ section 6
def test_the_two_checkpoint_forms_have_different_explanations_and_fixes():
    unavailable = classify_error(recorded("err-checkpoint-needs-cuda.txt"))
    count = classify_error(recorded("err-checkpoint-device-missing.txt"))
    assert unavailable.id == "checkpoint-needs-cuda" and count.id == "checkpoint-device-missing"
    assert unavailable.explanation != count.explanation and unavailable.advice != count.advice
    for facts in (None, {"device_count": 0}, {"device_count": 1, "torch": "2.13.0"}, {"device_count": 2, "cuda_visible_devices": ""}):
        rendered = render_match(unavailable, 80, context_lines(probe_context(unavailable, facts))).split("What to do:")[1]
        shown = list(unavailable.advice) + context_lines(probe_context(unavailable, facts)) + [rendered]  # (the explanation warns of it)
        assert not any('"cuda:0"' in s or "'cuda:0'" in s for s in shown), facts
    mac = classify_error("/Users/me/venv/lib/python3.12/site-packages/torch/serialization.py:1\n" + recorded("err-checkpoint-needs-cuda.txt"))
    assert mac.variant == "macos" and not any("cuda:0" in a for a in mac.advice)


def test_torch_without_cuda_on_a_mac_is_told_mps_or_cpu_not_a_cuda_wheel():
    text = ('  File "/Users/anna/miniforge3/lib/python3.11/site-packages/torch/cuda/__init__.py", line 289, in _lazy_init\n'
            '    raise AssertionError("Torch not compiled with CUDA enabled")\nAssertionError: Torch not compiled with CUDA enabled')
    m = classify_error(text)
    assert m.id == "torch-cpu-only" and m.variant == "macos"
    advice = " ".join(m.advice)
    assert "mps" in advice and "cpu" in advice and "torch recommend" not in advice
    assert classify_error("AssertionError: Torch not compiled with CUDA enabled").variant is None  # no Mac in the paste
    collect = "OS: macOS 14.4 (arm64)\nIs CUDA available: False\nAssertionError: Torch not compiled with CUDA enabled"
    assert classify_error(collect).variant == "macos"


def test_torch_without_cuda_on_an_amd_gpu_is_told_the_rocm_build():
    text = "GPU: AMD Radeon RX 7900 XTX (gfx1100)\nAssertionError: Torch not compiled with CUDA enabled"
    m = classify_error(text)
    assert m.variant == "rocm" and m.advice[0].startswith("Install torch's ROCm build")


def test_verify_wraps_advice_between_shell_words_like_explain():
    from cudaenv.render.verify import render_error
    from cudaenv.verify import classify

    error = classify("RuntimeError: CUDA error: no kernel image is available for execution on the device")
    text = "\n".join(render_error(error))
    span = '"import torch; print(torch.cuda.get_device_capability(), torch.cuda.get_arch_list())"'
    assert any(span in line for line in text.splitlines()), text


# ------------------------------------------------------------------ negatives: no CUDA cause, no confident cause
NEGATIVES = [
    'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\n    print(d["cuda"])\nKeyError: \'cuda\'',
    'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n    int("abc")\nValueError: invalid literal for int() with base 10: \'abc\'',
    "RecursionError: maximum recursion depth exceeded while calling a Python object",
    'Traceback (most recent call last):\n  File "t.py", line 8, in step\n    except torch.cuda.OutOfMemoryError:\nNameError: name \'batch\' is not defined',
    "ModuleNotFoundError: No module named 'torchvision'",
    'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space\n\tat java.base/java.util.Arrays.copyOf(Arrays.java:3512)',
    "kotlin.OutOfMemoryError: allocation failed",
    "ImportError: libGL.so.1: cannot open shared object file: No such file or directory",
    "Collecting torch==2.5.1\n  Downloading torch-2.5.1-cp311-cp311-manylinux1_x86_64.whl (906.4 MB)\nCollecting nvidia-nccl-cu12==2.21.5\n"
    "Collecting nvidia-cudnn-cu12==9.1.0.70\nInstalling collected packages: nvidia-nccl-cu12, nvidia-cudnn-cu12, torch\n"
    "Successfully installed nvidia-cudnn-cu12-9.1.0.70 nvidia-nccl-cu12-2.21.5 torch-2.5.1",
    "Requirement already satisfied: nvidia-cuda-runtime-cu12==12.4.127 in ./venv/lib/python3.11/site-packages (from torch) (12.4.127)",
    "ERROR: Could not find a version that satisfies the requirement numpyy (from versions: none)\nERROR: No matching distribution found for numpyy",
    "main.cpp:3:10: fatal error: foo.h: No such file or directory\n    3 | #include <foo.h>\n      |          ^~~~~~~\ncompilation terminated.",
    "kernel.cu(12): warning #177-D: variable \"x\" was declared but never referenced\n/usr/local/cuda/include/cuda_runtime.h:1: note: in expansion",
    "nvcc warning : The 'compute_35', 'compute_37', 'sm_35', and 'sm_37' architectures are deprecated, and may be removed in a future release",
    "-- Found CUDA: /usr/local/cuda (found version \"12.4\")\n-- Configuring done\n-- Generating done\n-- Build files have been written to: /src/build",
    "epoch 1 loss 0.3120 | gpu mem 10.2 GiB | lr 3e-4\nepoch 2 loss 0.2871 | gpu mem 10.2 GiB | lr 3e-4",
    '{"device": "cuda:0", "cuda": "12.4", "batch_size": 64, "amp": true}',
    "PyTorch version: 2.5.1+cu124\nIs debug build: False\nCUDA used to build PyTorch: 12.4\nIs CUDA available: True\nGPU models and configuration: GPU 0: NVIDIA A100-SXM4-80GB",
    "Solving environment: done\n## Package Plan ##\n  added / updated specs:\n    - pytorch-cuda=12.4\nPreparing transaction: done",
    "Step 3/10 : RUN pip install torch --index-url https://download.pytorch.org/whl/cu124\n ---> Running in 4f1c2\nSuccessfully built 4f1c2",
    "Some weights of BertForSequenceClassification were not initialized from the model checkpoint at bert-base-uncased and are newly initialized",
    "error: subprocess-exited-with-error\n  Error: Please make sure the libxml2 and libxslt development packages are installed.",
    "Segmentation fault (core dumped)",
    ASYNC,
    "$ python -c 'import torch; print(torch.cuda.is_available())'\nTrue",
    "FAILED tests/test_model.py::test_forward - AssertionError: assert 3 == 4",
    ">>> torch.cuda.device_count()\n2",
    "Wed Dec  3 10:00:00 2026\n| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |\n| No running processes found |",
]


@pytest.mark.parametrize("text", NEGATIVES, ids=["negative-%d" % i for i in range(len(NEGATIVES))])
def test_text_with_no_cuda_problem_gets_no_confident_cause(text):
    assert len(NEGATIVES) >= 20
    for m in classify_all(text):
        assert m.confidence == "low", (m.id, m.matched, m.confidence, text)


# ------------------------------------------------------------------ hypothesis and bounds
@settings(max_examples=300)
@given(st.text(max_size=2000))
def test_any_text_never_raises(text):
    for m in classify_all(text):
        assert m.confidence in R.CONFIDENCE
        render_match(m, 60, context_lines(probe_context(m, {"device_count": 1})), [])
    assert len(normalize(text)) == len(lines_of(text))


@settings(max_examples=200)
@given(st.binary(max_size=2000))
def test_any_bytes_never_raise(data):
    paste = read_paste(io.BytesIO(data))
    classify_all(paste.text)


@settings(max_examples=100)
@given(st.lists(st.sampled_from(["\x1b[1;31m", "> ", "**", "[rank0]: ", "ERROR    ", "\uff1a", "\u3002", "\r", "\n", "`",
                                 "2024-05-01 12:00:00,001 - ", "\u2502", "  ", "\u201c"]), max_size=8))
def test_decorations_around_a_recorded_error_keep_its_id(decor):
    text = recorded("err-cuda-oom.txt").split("# ---\n", 1)[-1]
    dressed = "".join(decor) + text.replace("\n", "\n" + "".join(d for d in decor if d not in ("\r", "\n")))
    m = classify_error(dressed)
    assert m is not None and m.id == "cuda-oom", dressed


def test_a_50_mb_paste_and_hostile_lines_take_bounded_linear_work():
    """Counted steps, not seconds (the figures are bench/run.py's, --only explain): a 50 MB paste is searched as a 5 MB
    one is (explain searches its first and last half MB), and hostile runs take linear work."""
    line = b"step 1 loss 0.25 \x1b[0m[rank0]: "
    error = b"\nRuntimeError: CUDA error: an illegal memory access was encountered\n"

    def classify_paste(data):
        return classify_error(read_paste(io.BytesIO(data)).text)

    big, small = line * (50 * 1024 * 1024 // 30) + error, line * (5 * 1024 * 1024 // 30) + error
    assert classify_paste(big).id == "illegal-memory-access"
    # the same search; only the reading of the 45 more 1 MB blocks (a few steps each) is added
    assert count_work(classify_paste, big)[0] <= count_work(classify_paste, small)[0] + 20 * 45
    for head, unit in (("", "["), ("", ">"), ("", "\n"), ("", " "), ("", "\uff1a"), ("E", " "), ("", "2024-05-01 "),
                       ("", "Could not load library "), ("", "During handling of the above exception ")):
        assert_linear(classify_all, unit, head=head)


def test_a_short_paste_compiles_only_the_patterns_whose_literals_it_holds():
    """Explain's start-up: a pattern is compiled when its literals are in the paste (T.Patterns), so a two-line paste
    compiles a handful of the table's patterns, and the answer is the one compiling them all gives."""
    paste = ("RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
             "CUDA kernel errors might be asynchronously reported at some other API call\n")
    T.rows.cache_clear()
    found = [m.id for m in classify_all(paste)]
    compiled = sum(1 for row in T.rows() for c in row.patterns._compiled if c is not None)
    total = sum(len(row.patterns) for row in T.rows())
    assert "gpu-arch-unsupported" in found
    assert 0 < compiled <= total // 10, (compiled, total)
    for row in T.rows():  # every pattern compiled now: the same answer
        list(row.patterns)
    assert [m.id for m in classify_all(paste)] == found


def test_a_cut_incompatible_keys_print_does_not_count_the_list_it_lacks():
    """A paste cut before _IncompatibleKeys' unexpected_keys list does not say "0 of the checkpoint's keys matched
    nothing": the count is not known; the explanation says the paste ends before that list."""
    missing = ", ".join("'module.encoder.layer%d.weight'" % i for i in range(12))
    m = classify_error("_IncompatibleKeys(missing_keys=[%s, 'module.head.weight'," % missing)
    assert m.id == "state-dict-random-init", m
    assert "13 of the model's keys not loaded" in m.explanation and "ends before the list" in m.explanation
    assert "0 of the checkpoint" not in m.explanation and "{" not in m.explanation
    whole = classify_error("_IncompatibleKeys(missing_keys=[%s], unexpected_keys=[%s])"
                           % (missing, missing.replace("module.", "")))
    assert whole.id == "state-dict-random-init" and "12 of the checkpoint's keys matched nothing" in whole.explanation
