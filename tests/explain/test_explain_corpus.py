"""The explain corpus: real messages people pasted into public issue threads, one file per paste.

``tests/corpus/explain/<id>--<n>.txt``: the first line is ``# source: URL`` (the thread it was copied from), an
optional second line ``# xfail: REASON`` marks a messy form the classifier does not read yet; the rest is the
text as it was posted (markdown, log prefixes, wrapped lines, other languages around it), trimmed of unrelated
parts. Every file must be classified as its id; each id has at least :data:`MIN_PER_ID` files, except the ids
of messages only cudaenv itself prints (:data:`CUDAENV_OWN`: no public thread quotes them).
"""

import re
from collections import Counter

import pytest

from builders import TESTS, assert_bounded, recorded, recorded_runs
from cudaenv.explain import classify_error, known_ids
from cudaenv.explain.checks import CHECKS, PROVIDES
from cudaenv.core.resources import load_table

CORPUS = TESTS / "corpus" / "explain"
NAME = re.compile(r"^(?P<id>[a-z0-9-]+)--(?P<n>\d+)\.txt$")
MIN_PER_ID = 5
CUDAENV_OWN = {"dist-timeout", "verify-timeout", "verify-crashed", "torch-import-hang", "wrong-result"}
# (state-dict-random-init, issue 32, has its five: mmcv's warning four times, one _IncompatibleKeys print cut before
# its unexpected list; the search excerpts cut long lists, so three are two excerpts of one post joined at a [...])
NOT_YET_FIVE = {"jax-cuda-library-not-loaded"}  # issue 29: four pastes from three threads; the other threads found
# that quote it (jax#29843, google-deepmind/mujoco_playground#137, NixOS/nixpkgs#375186, magenta/mt3#145,
# michael-0brien/cryojax#559) are held-out threads (tests/corpus/threads/README.md), kept out of this corpus
FILES = sorted(p.name for p in CORPUS.glob("*.txt"))


def read(name):
    """(expected id, source URL, xfail reason or None, the pasted text)."""
    raw = (CORPUS / name).read_bytes().decode("utf-8")
    first, _, rest = raw.partition("\n")
    reason = None
    if rest.startswith("# xfail: "):
        line, _, rest = rest.partition("\n")
        reason = line[len("# xfail: "):].strip()
    return NAME.match(name).group("id"), first[len("# source: "):].strip(), reason, rest


def test_every_file_is_named_and_sourced():
    assert FILES
    for name in FILES:
        assert NAME.match(name), name
        expected, source, _, text = read(name)
        assert expected in known_ids(), name
        assert re.match(r"https?://\S+$", source), name
        assert text.strip(), name


@pytest.mark.parametrize("name", FILES)
def test_each_paste_is_classified_as_its_id(name, request):
    expected, _, reason, text = read(name)
    if reason:
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))
    match = classify_error(text)
    assert match is not None, name
    assert match.id == expected, (name, match.id, match.matched)


def test_at_least_five_real_pastes_per_id():
    counts = Counter(read(name)[0] for name in FILES)
    short = {i for i in known_ids() if i not in CUDAENV_OWN and counts.get(i, 0) < MIN_PER_ID}
    assert short == NOT_YET_FIVE


def test_every_check_the_table_names_exists_and_declares_its_values():
    for row in load_table("error_patterns")["rows"]:
        if "check" in row:
            assert row["check"] in CHECKS and row["check"] in PROVIDES, row["id"]
    assert set(CHECKS) == set(PROVIDES)


# ------------------------------------------------------------------ what the checks read from the lists
def _classify(text):
    m = classify_error(text)
    return m.id, dict(m.values)


def test_prefix_in_either_direction_and_only_when_the_lists_differ_by_it():
    head = 'RuntimeError: Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: %s. \n\tUnexpected key(s) in state_dict: %s. '
    ids, values = _classify(head % ('"fc.weight", "fc.bias"', '"module.fc.weight", "module.fc.bias"'))
    assert ids == "state-dict-prefix" and values["prefix"] == "module." and "if_ckpt_prefixed" in values
    ids, values = _classify(head % ('"_orig_mod.fc.weight"', '"fc.weight"'))
    assert ids == "state-dict-prefix" and values["prefix"] == "_orig_mod." and "if_model_prefixed" in values
    ids, values = _classify(head % ('"fc.weight", "fc.bias"', '"module.fc.weight", "module.head.bias"'))
    assert ids == "state-dict-mismatch" and "if_renamed" in values
    ids, values = _classify(head % ('"fc.weight"', '"state_dict", "epoch"'))
    assert ids == "state-dict-mismatch" and values["nested_key"] == "state_dict"


def test_a_batchnorm_counter_listed_on_one_side_only_is_still_the_prefix_case():
    # issue 27: m.load_state_dict(nn.DataParallel(m).state_dict()) for a model with BatchNorm: torch lists
    # module.bn.num_batches_tracked as unexpected but never bn.num_batches_tracked as missing (BatchNorm's
    # _load_from_state_dict fills a missing counter); the same for torch.compile's _orig_mod.
    head = 'RuntimeError: Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: %s. \n\tUnexpected key(s) in state_dict: %s. '
    plain = ["conv.weight", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var", "fc.weight"]
    for prefix in ("module.", "_orig_mod."):
        wrapped = [prefix + k for k in plain] + [prefix + "bn.num_batches_tracked"]
        ids, values = _classify(head % (", ".join('"%s"' % k for k in plain), ", ".join('"%s"' % k for k in wrapped)))
        assert ids == "state-dict-prefix" and values["prefix"] == prefix and "if_ckpt_prefixed" in values, (ids, values)
        # the other way round: a wrapped model, a plain checkpoint
        ids, values = _classify(head % (", ".join('"%s"' % (prefix + k) for k in plain),
                                        ", ".join('"%s"' % k for k in plain + ["bn.num_batches_tracked"])))
        assert ids == "state-dict-prefix" and values["prefix"] == prefix and "if_model_prefixed" in values, (ids, values)
    # a counter with nothing else of its module on the other side is still a mismatch
    ids, _ = _classify(head % ('"fc.weight"', '"module.fc.weight", "module.bn2.num_batches_tracked", "module.bn2.weight"'))
    assert ids == "state-dict-mismatch"


def test_prefix_advice_strips_only_the_keys_that_have_it():
    m = classify_error('Missing key(s) in state_dict: "a.w". \n\tUnexpected key(s) in state_dict: "module.a.w". ')
    assert any('if k.startswith("module.") else k' in a for a in m.advice)
    assert any("cudaenv checkpoint fix FILE --strip-prefix module." in a for a in m.advice)
    assert not any("{" + "if_" in a for a in m.advice + m.details)


def test_capability_warnings_split_by_where_the_gpu_lies():
    warn = "Found GPU0 %s which is of cuda capability %s.\n    Minimum and Maximum cuda capability supported by this version of PyTorch is\n    (%s) - (%s)"
    assert classify_error(warn % ("NVIDIA GB10", "12.1", "8.0", "12.0")).id == "gpu-capability-warning"
    m = classify_error(warn % ("NVIDIA GeForce GTX 1080 Ti", "6.1", "7.0", "12.0"))
    assert m.id == "gpu-too-old-for-torch" and dict(m.values)["last_variant"].startswith("cu")
    assert classify_error(warn % ("Future GPU", "13.0", "7.5", "12.0")).id == "gpu-arch-unsupported"


def test_nvcc_arch_names_the_first_cuda_from_the_table():
    m = classify_error("nvcc fatal   : Unsupported gpu architecture 'compute_89'")
    row = next(r for r in load_table("cuda_arch")["rows"] if r["cc"] == "8.9")
    assert dict(m.values)["first_cuda"] == row["cuda_from"]


@pytest.mark.parametrize("arch, pick, get", [
    ("compute_61", "12.9", "cudaenv install 12.9 --plan"),  # 13.0 refuses Pascal: the newest that still targets it
    ("compute_37", "11.8", "cudaenv install 11.8 --plan"),  # Kepler: 12.0 dropped it
    ("compute_120", None, "cudaenv install 13."),  # a Blackwell GPU: the newest toolkit, from NVIDIA's wheels
])
def test_nvcc_arch_advice_names_a_toolkit_that_targets_the_arch(arch, pick, get):
    from cudaenv.toolkit.install.precheck import nvcc_compiles_for
    from cudaenv.core.version import cc_tuple

    m = classify_error("nvcc fatal   : Unsupported gpu architecture '%s'" % arch)
    values = dict(m.values)
    advice = m.advice[0]
    assert "or newer; cudaenv install %s" % values["first_cuda"] not in advice, advice
    assert nvcc_compiles_for(values["pick_cuda"], cc_tuple(arch))
    assert "cudaenv use %s;" % values["pick_cuda"] in advice and get in advice, advice
    if pick:
        assert values["pick_cuda"] == pick and "--runfile" in advice
    else:
        assert "--plan" not in advice


def test_pip_names_the_pythons_of_the_release_from_the_table():
    from cudaenv.facts.torch import pythons_for

    m = classify_error("ERROR: Could not find a version that satisfies the requirement torch==2.1.0 (from versions: none)")
    assert m.id == "torch-wheel-not-found"
    assert dict(m.values)["pythons"] == ", ".join(pythons_for("2.1.0"))


def test_pip_reads_the_wanted_torch_release_by_pep440():
    """explain_checks.torch_wheel reads the wanted version with cudaenv.core.version's PEP 440 readers (it had its own
    regex): a sentence's full stop is no part of the local tag, and only a final release gets the table's facts."""
    from cudaenv.facts.torch import pythons_for

    line = "ERROR: No matching distribution found for torch==%s"
    m = classify_error(line % "2.7.1+cu128.")
    values = dict(m.values)
    assert values["local_tag"] == "cu128" and values["pythons"] == ", ".join(pythons_for("2.7.1"))
    for wanted in ("2.8.0rc1", "2.7.*", "2.7.1.post1"):  # no final release: none of the table's facts
        assert "pythons" not in dict(classify_error(line % wanted).values), wanted


def test_runfile_tells_a_full_tmp_from_a_corrupt_download_and_from_a_web_page():
    tmp = classify_error("Extraction failed.\nEnsure there is enough space in /tmp and that the installation package is not corrupt")
    assert "if_tmp_full" in dict(tmp.values) and any("--tmpdir=" in a for a in tmp.advice)
    html = classify_error("cuda_12.4.0_550.54.14_linux.run: line 1: syntax error near unexpected token `newline'\n"
                          "cuda_12.4.0_550.54.14_linux.run: line 1: `<!DOCTYPE html>'")
    assert html.id == "runfile-corrupt" and "if_html" in dict(html.values)
    tar = classify_error("gzip: stdin: not in gzip format\ntar: Child returned status 1")
    assert "if_not_cuda" in dict(tar.values) and not any("cudaenv check-installer" in a for a in tar.advice)


def test_not_cuda_names_where_to_look():
    m = classify_error("adb: device unauthorized.\nThis adb server's $ADB_VENDOR_KEYS is not set")
    assert m.id == "not-cuda" and any("adb" in d for d in m.details)
    m = classify_error("RuntimeError: MPS backend out of memory (MPS allocated: 18.04 GB, other allocations: 384.00 KB)")
    assert m.id == "not-cuda" and any("mps" in d for d in m.details)


def test_cudnn_versions_in_both_forms():
    m = classify_error("RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7600")
    assert dict(m.values)["compiled_version"] == "7.1.2" and dict(m.values)["runtime_version"] == "7.6.0"
    m = classify_error("cuDNN version incompatibility: PyTorch was compiled  against (8, 7, 0) but found runtime version (8, 2, 4).")
    assert dict(m.values)["compiled_version"] == "8.7.0" and dict(m.values)["framework"] == "torch"


def test_xlas_cudnn_mismatch_is_said_of_xla_not_of_torch():
    """JAX's and TensorFlow's XLA says its own cuDNN check (tests/corpus/explain/cudnn-version-mismatch--8.txt): the
    detail names XLA and its two versions, never torch."""
    text = (CORPUS / "cudnn-version-mismatch--8.txt").read_text(encoding="utf-8")
    m = classify_error(text)
    assert m.id == "cudnn-version-mismatch"
    values = dict(m.values)
    assert (values["framework"], values["compiled_version"], values["runtime_version"]) == ("XLA (JAX, TensorFlow)", "8.6.0", "8.5.0")


def test_jaxs_own_cudnn_check_is_said_of_jax():
    """JAX's start-up check (MIT-REALM/gcbfplus#1) gives both versions as integers; the detail names JAX, never torch.
    The 'Outdated cuDNN installation' form (rgommers/pixi-dev-scipystack#1) is the same row, without a version detail."""
    m = classify_error((CORPUS / "cudnn-version-mismatch--11.txt").read_text(encoding="utf-8"))
    values = dict(m.values)
    assert m.id == "cudnn-version-mismatch"
    assert (values["framework"], values["compiled_version"], values["runtime_version"]) == ("JAX", "8.9.6", "8.6.0")
    m = classify_error((CORPUS / "cudnn-version-mismatch--12.txt").read_text(encoding="utf-8"))
    assert m.id == "cudnn-version-mismatch" and not any("torch" in d for d in m.details)


# ------------------------------------------------------------------ JAX's and XLA's GPU start-up errors (issue 29)
def _corpus_text(name):
    return (CORPUS / name).read_text(encoding="utf-8").partition("\n")[2]


def test_xlas_summary_lines_never_outrank_the_cause_printed_above_them():
    """'DNN library initialization failed', 'No visible GPU devices' and 'DNN library is not found' only sum up an error
    XLA printed before them: with that line in the paste, its row is the answer; alone, the summary's row is."""
    summary = "jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: DNN library initialization failed. Look at the errors above for more details."
    mismatch = _corpus_text("cudnn-version-mismatch--8.txt")  # jax-ml/jax#16038: XLA's own cuDNN check
    assert classify_error(mismatch + "\n" + summary).id == "cudnn-version-mismatch"
    assert classify_error(summary).id == "dnn-library-init-failed"
    no_visible = "jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: No visible GPU devices."
    for cause, expected in (
        ("failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: CUDA_ERROR_SYSTEM_NOT_READY: system not yet initialized", "cuda-system-not-ready"),
        ("failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error", "cuda-unknown-error"),
    ):  # jax-ml/jax#24866 and #21998: cuInit's own error is the cause
        m = classify_error("E external/xla/xla/stream_executor/cuda/cuda_driver.cc:152] %s\nTraceback (most recent call last):\n%s" % (cause, no_visible))
        assert m.id == expected, (cause, m.id)
    assert classify_error(no_visible).id == "framework-no-gpu-seen"
    not_found = "W tensorflow/core/framework/op_kernel.cc:1830] OP_REQUIRES failed at conv_ops_fused_impl.h:625 : UNIMPLEMENTED: DNN library is not found."
    assert classify_error(mismatch + "\n" + not_found).id == "cudnn-version-mismatch"  # stardist/stardist#228's order
    assert classify_error(not_found).id == "cudnn-not-loaded"


def test_cuinit_no_device_is_xlas_no_gpu_under_jax_and_stays_torchs_elsewhere():
    """XLA's 'CUDA error: Failed call to cuInit: CUDA_ERROR_NO_DEVICE' (JAX, jax-ml/jax#28376) and the JAX plugin's
    'operation cuInit(0) failed' (jax-ml/jax#37668) are the framework's no-GPU row, with cuInit's code in the detail;
    torch's and the older TensorFlow wording of the same code keep torch-cuda-unavailable's answer."""
    for name in ("framework-no-gpu-seen--2.txt", "framework-no-gpu-seen--4.txt"):
        m = classify_error(_corpus_text(name))
        assert m.id == "framework-no-gpu-seen" and dict(m.values)["cuinit"] == "CUDA_ERROR_NO_DEVICE", name
        assert any("CUDA_ERROR_NO_DEVICE" in d for d in m.details), m.details
    tf = "E tensorflow/stream_executor/cuda/cuda_driver.cc:328] failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"
    assert classify_error(tf).id == "torch-cuda-unavailable"
    assert classify_error("RuntimeError: No CUDA GPUs are available").id == "torch-cuda-unavailable"


def test_the_xla_rows_fill_their_details_from_the_paste_and_name_the_doctors_checks():
    from cudaenv.facts.findings import finding_ids

    m = classify_error(_corpus_text("dnn-library-init-failed--4.txt"))  # jax-ml/jax#22626
    assert m.id == "dnn-library-init-failed" and dict(m.values)["status"] == "CUDNN_STATUS_INTERNAL_ERROR"
    m = classify_error(_corpus_text("cudnn-not-loaded--4.txt"))  # tensorflow/tensorflow#722: no sentence's full stop
    assert m.id == "cudnn-not-loaded" and dict(m.values)["library"] == "libcudnn.so.6.5"
    assert dict(classify_error(_corpus_text("cudnn-not-loaded--7.txt")).values)["library"] == "cudnn64_5.dll"
    assert "library" not in dict(classify_error(_corpus_text("cudnn-not-loaded--1.txt")).values)  # JAX names no file
    known = set(finding_ids())
    for row_id, named in (("dnn-library-init-failed", {"library-shadowed", "library-not-found"}),
                          ("cudnn-not-loaded", {"library-shadowed", "library-not-found"}),
                          ("framework-no-gpu-seen", {"framework-no-gpu-seen", "visible-devices-empty", "container-no-gpu",
                                                     "no-driver", "framework-driver-too-old"})):
        row = next(r for r in load_table("error_patterns")["rows"] if r["id"] == row_id)
        advice = " ".join(row["advice"])
        assert named <= known and all(f in advice for f in named), row_id

# ------------------------------------------------------------------ the checks never fail on hostile text
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cudaenv.explain.checks import key_lists, run_check  # noqa: E402

_PIECES = st.sampled_from(['Missing key(s) in state_dict: ', 'Unexpected key(s) in state_dict: ', '"module.a"', '"a"',
                           ', ', '\n', '\n\t', 'size mismatch for a: ', '“', '`', 'gzip: stdin: ', 'enough space',
                           '<!DOCTYPE', '(8, 7, 0)', '7102', '12.1', 'sm_89', 'compute_', 'torch==', '+cu121'])


@settings(max_examples=200)
@given(text=st.one_of(st.text(max_size=400), st.lists(_PIECES, max_size=60).map("".join)),
       values=st.dictionaries(st.sampled_from(["gpu_cc", "min_cc", "max_cc", "torch_release", "torch_variant", "arch",
                                               "torch_req", "compiled", "runtime", "old_key", "is_adb"]),
                              st.text(max_size=20), max_size=6))
def test_every_check_takes_any_text_and_values(text, values):
    for name in CHECKS:
        out = run_check(name, dict(values), text)
        assert out is None or all(isinstance(k, str) and isinstance(v, str) for k, v in out.items())


def test_key_lists_are_bounded_on_a_huge_paste():
    def paste(keys):
        return ("Missing key(s) in state_dict: " + '"module.layer.weight", ' * keys + "\n"
                + "Unexpected key(s) in state_dict: " + '"' + 'x' * 300_000)

    missing, unexpected = key_lists(paste(200_000))
    assert 0 < len(missing) <= 5_000 and unexpected == []
    # counted, not timed: 200,000 keys cost no more Python than 20,000 (the list stops at its bound)
    assert_bounded(key_lists, paste(20_000), paste(200_000), passes=3)  # isascii(), lower() and a slice: in C


def test_makeself_failures_lead_to_check_installer():
    # issue 27: makeself always prints its space line, so a damaged CUDA runfile got only "/tmp is full" advice.
    # The two lines as makeself 2.1.x prints them after gzip fails (its MS_Check/extraction messages).
    text = ("gzip: stdin: invalid compressed data--format violated\n"
            "Extraction failed.\nEnsure there is enough space in /tmp and that the installation package is not corrupt\n")
    m = classify_error(text)
    advice = "\n".join(m.advice)
    # the data is damaged (a full /tmp fails writes, it does not corrupt gzip data): the file is the suspect
    assert m.id == "runfile-corrupt" and "cudaenv check-installer FILE" in advice and "df -h /tmp" not in advice, advice
    # only the space line, no damaged data: /tmp is the suspect, not the file
    full = classify_error("tar: ./builds/cuda: Cannot write: No space left on device\n"
                          "Extraction failed.\nEnsure there is enough space in /tmp and that the installation package is not corrupt\n")
    assert "df -h /tmp" in "\n".join(full.advice) and "check-installer" not in "\n".join(full.advice)
    for name in ("err-runfile-corrupt-2.txt", "err-runfile-corrupt-3.txt", "err-runfile-corrupt-4.txt"):
        m = classify_error(recorded(name))
        assert m.id == "runfile-corrupt" and "cudaenv check-installer FILE" in "\n".join(m.advice), name
    assert "web page" in "\n".join(classify_error(recorded("err-runfile-corrupt-4.txt")).advice)


# ------------------------------------------------------------------ silent random init (issue 32)
def test_a_strict_false_print_whose_keys_differ_by_a_nested_prefix_is_silent_random_init():
    ids, values = _classify(recorded("err-state-dict-random-init.txt"))
    assert ids == "state-dict-random-init" and values["prefix"] == "_orig_mod.module." and "if_strip" in values
    assert values["matched"] == "7" and values["missing_count"] == "7"
    ids, values = _classify("_IncompatibleKeys(missing_keys=['module.fc.weight', 'module.fc.bias'], "
                            "unexpected_keys=['fc.weight', 'fc.bias'])")
    assert ids == "state-dict-random-init" and values["prefix"] == "module." and "if_add" in values


def test_a_deliberate_partial_load_is_not_called_random_init():
    # a new head (zifuwan/Sigma#44's shape: a few missing, a few unexpected, no prefix between them): not this row
    text = ("_IncompatibleKeys(missing_keys=['outnorm0.weight', 'outnorm0.bias'], "
            "unexpected_keys=['classifier.head.weight', 'classifier.head.bias'])")
    assert classify_error(text) is None or classify_error(text).id != "state-dict-random-init"
    many = "_IncompatibleKeys(missing_keys=[%s], unexpected_keys=[%s])" % (
        ", ".join("'enc.l%d.w'" % i for i in range(12)), ", ".join("'dec.l%d.w'" % i for i in range(12)))
    ids, values = _classify(many)
    assert ids == "state-dict-random-init" and "if_no_prefix" in values and values["missing_count"] == "12"


def test_real_whole_model_mismatches_name_the_prefix_and_real_partial_loads_are_not_random_init():
    # the corpus's pastes (tests/corpus/explain/state-dict-random-init--N.txt): what each one says
    want = {1: ("strip", "backbone.", "if_mmcv"), 2: ("strip", "teacher.", "if_mmcv"), 3: ("strip", "backbone.", "if_mmcv"),
            4: ("wrapped", "module.", None), 5: ("strip", "backbone.", "if_mmcv")}
    for n, (action, prefix, flag) in want.items():
        ids, values = _classify(read("state-dict-random-init--%d.txt" % n)[3])
        assert ids == "state-dict-random-init" and values["prefix"] == prefix, n
        assert ("if_strip" if action == "strip" else "if_wrapped_cut") in values, n
        assert (flag in values) if flag else ("if_mmcv" not in values), n
    # deliberate partial loads posted in threads (a new head, a backbone into a detector, a decoder trained from
    # scratch, one unused bias): never this row
    for name, text in recorded_runs("state-dict-partial-loads.txt").items():
        match = classify_error(text)
        assert (match.id if match else None) != "state-dict-random-init", name


def test_mmcvs_warning_lists_are_read_up_to_a_blank_line_a_label_or_a_cut():
    from cudaenv.explain.checks import mmcv_lists
    from builders import assert_linear

    text = ("The model and loaded state dict do not match exactly\n\nunexpected key in source state_dict: module.a.w, "
            "module.b.w\n\nmissing keys in source state_dict: a.w, b.w\n")
    assert mmcv_lists(text) == (["a.w", "b.w"], ["module.a.w", "module.b.w"], False)
    wrapped = "missing keys in source state_dict: layer1.0.conv1.wei\nght, layer1.0.bn1.bias\n"  # a terminal's wrap
    assert mmcv_lists(wrapped) == (["layer1.0.conv1.weight", "layer1.0.bn1.bias"], [], False)
    assert mmcv_lists("missing keys in source state_dict: a.w, b.w,............") == (["a.w", "b.w"], [], True)
    assert mmcv_lists("missing keys in source state_dict: a.w, b.") == (["a.w", "b."], [], True)  # ran to the end
    assert mmcv_lists("unexpected key in source state_dict") == ([], [], False)
    assert_linear(lambda t: mmcv_lists(t), "backbone.x.y, ", head="unexpected key in source state_dict: ",
                  tail="\n\nmissing keys in source state_dict: x.y\n")


@settings(max_examples=300)
@given(st.lists(st.sampled_from(list("ab.,，\n :[]'") + [
    "missing keys in source state_dict: ", "unexpected key in source state_dict: ", "...", "_IncompatibleKeys(",
    "missing_keys=[", "unexpected_keys=[", "module."]), max_size=60).map("".join) | st.text())
def test_any_key_lists_give_lists_and_never_raise(text):
    from cudaenv.explain.checks import mmcv_lists, silent_random_init

    missing, unexpected, cut = mmcv_lists(text)
    assert all(k and "," not in k and "\n" not in k for k in missing + unexpected), (missing, unexpected, cut)
    found = silent_random_init({}, text)
    if found is not None:
        assert int(found["missing_count"]) > 0 and found["missing_first"]


def test_the_incompatible_lists_are_read_in_linear_work():
    from cudaenv.explain.checks import incompatible_lists
    from builders import assert_linear

    assert incompatible_lists("_IncompatibleKeys(missing_keys=['a.b'], unexpected_keys=['m.a.b'])") == (["a.b"], ["m.a.b"])
    assert incompatible_lists("_IncompatibleKeys(missing_keys=['a.b'") == (["a.b"], [])  # a paste cut short
    assert_linear(incompatible_lists, "'module.x.y', ", head="_IncompatibleKeys(missing_keys=[", tail="], unexpected_keys=[])")


def test_prefix_fix_names_the_prefix_that_matches_most_keys():
    from cudaenv.checkpoint.names import most_unmatched, prefix_fix
    from builders import assert_linear

    assert prefix_fix(["a.w", "b.w"], ["encoder.a.w", "encoder.b.w", "decoder.c.w"]) == ("strip", "encoder.", 2)
    assert prefix_fix(["module.a.w"], ["a.w"]) == ("add", "module.", 1)
    assert prefix_fix(["a.w"], ["b.w"]) is None and prefix_fix([], ["x.y"]) is None
    assert most_unmatched(6, 10, 0, 4) and most_unmatched(0, 10, 3, 4) and not most_unmatched(2, 10, 2, 10)
    assert_linear(lambda t: prefix_fix(t.split(","), ["x"]), "m.m.m.m.m.m.m.m.m.m.m.m.a,")


def test_the_cuda_range_of_the_nvcc_arch_advice_is_said_in_chinese(chinese):
    from cudaenv.core.i18n import tr

    m = classify_error("nvcc fatal   : Unsupported gpu architecture 'compute_61'")
    values = dict(m.values)
    said = tr(m.advice[0])
    assert "（CUDA %s 到 %s）" % (values["first_cuda"], values["pick_cuda"]) in said or \
        "CUDA %s 到 %s" % (values["first_cuda"], values["pick_cuda"]) in said, said
    assert " to %s" % values["pick_cuda"] not in said
