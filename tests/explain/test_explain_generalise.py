"""explain reads a known cause by its stable parts in whatever words it comes (issue 28): each test fails on the code
before issue 28 (the corpus of public pastes is tests/explain/test_explain_threads.py)."""

from cudaenv.explain import classify_all, classify_error


def _id(text):
    m = classify_error(text)
    return None if m is None else m.id


def test_windows_dll_loader_error_codes_name_the_cause():
    assert _id("Could not load library cudnn_ops_infer64_8.dll. Error code 126") == "cuda-library-missing"
    assert _id("could not load librart cudnn_ops_infer64_8.dll .error code 126") == "cuda-library-missing"  # a typo
    assert _id("Could not locate zlibwapi.dll. Please make sure it is in your library path!") == "cuda-library-missing"
    assert _id("Could not load library cudnn_cnn_infer64_8.dll. Error code 127") == "cuda-library-version-mixup"
    m = classify_error("Could not load library zlibwapi.dll. Error code 193. Please verify that the library is built")
    assert m.id == "cuda-library-missing" and any("another processor" in d for d in m.details)


def test_a_broken_library_is_not_a_missing_one():
    m = classify_error("ImportError: /usr/local/cuda/lib64/libcudnn.so.8: file too short")
    assert m.id == "cuda-library-missing" and any("broken" in d for d in m.details)
    assert _id("OSError: libcudnn.so8: cannot open shared object file: No such file or directory") == "cuda-library-missing"


def test_two_copies_of_a_library_mixed_is_a_version_mixup():
    text = ("OSError: /env/lib/python3.7/site-packages/nvidia/cublas/lib/libcublas.so.11: symbol cublasLtHSHMatmulAlgoInit "
            "version libcublasLt.so.11 not defined in file libcublasLt.so.11 with link time reference")
    m = classify_error(text)
    assert m.id == "cuda-library-version-mixup" and dict(m.values)["library"] == "libcublasLt.so.11"


def test_a_bare_address_in_use_is_the_rendezvous_port_only_in_a_distributed_paste():
    dist = ('  File "/opt/conda/lib/python3.8/site-packages/torch/distributed/rendezvous.py", line 190, in _env_rendezvous_handler\n'
            "    store = TCPStore(master_addr, master_port, world_size, start_daemon, timeout)\nRuntimeError: Address already in use\n")
    assert _id(dist) == "dist-port-in-use"
    assert _id("OSError: [Errno 98] Address already in use\n * Running on http://127.0.0.1:5000 (flask)") is None


def test_the_kernel_logs_api_mismatch_names_both_versions_across_its_wrapped_lines():
    text = ("[ 9.424670] NVRM: API mismatch: the client 'kwin_wayland' (pid 1005)\n"
            "               NVRM: has the version 595.84, but this kernel module has\n"
            "               NVRM: the version 595.80.  Please make sure that this\n")
    m = classify_error(text)
    assert m.id == "driver-library-mismatch"
    assert dict(m.values)["client_version"] == "595.84" and dict(m.values)["kernel_version"] == "595.80"


def test_nccl_warn_lines_and_nccl_tests_name_the_reason():
    m = classify_error("node:1:2 [0] include/socket.h:390 NCCL WARN Connect to 10.38.10.112<21724> failed : Connection refused")
    assert m.id == "nccl-error" and dict(m.values)["reason"] == "Connection refused"
    m = classify_error("node: Test NCCL failure common.cu:958 'internal error - please report this issue to the NCCL developers / '")
    assert m.id == "nccl-error"


def test_older_torch_wording_of_mixed_devices_but_not_a_dtype_mismatch():
    assert _id("RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same") \
        == "tensors-on-different-devices"
    assert _id("RuntimeError: Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) should be the same") \
        != "tensors-on-different-devices"


def test_uv_and_poetry_resolver_messages_are_a_missing_torch_wheel():
    m = classify_error("error: Distribution `torch==2.5.1 @ registry+https://download.pytorch.org/whl/cu124` can't be installed "
                       "because it doesn't have a source distribution or wheel for the current platform\n\nhint: You're on "
                       "Windows (`win_amd64`), but `torch` (v2.5.1) only has wheels for the following platform: `linux_aarch64`")
    assert m.id == "torch-wheel-not-found" and dict(m.values)["torch_req"] == "2.5.1"
    assert any("linux_aarch64" in d for d in m.details)
    assert _id("  RuntimeError\n\n  Unable to find installation candidates for torch (2.4.0)\n") == "torch-wheel-not-found"


def test_an_installer_without_a_terminal_is_not_a_corrupt_download():
    m = classify_error("cuda-linux64-rel-8.0.61-21551265.run: line 136: /dev/tty: No such device or address")
    assert m.id == "runfile-corrupt" and "if_no_tty" in dict(m.values)
    assert any("--silent" in a for a in m.advice) and not any("download it again" in a for a in m.advice)


def test_the_container_toolkit_without_a_host_driver_is_no_driver():
    assert _id("nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared "
               "object file: no such file or directory: unknown.") == "no-driver"


def test_a_cause_outranks_its_after_effect_in_time_order():
    text = ("THCudaCheck FAIL file=THCStorage.c line=147 error=4 : unspecified launch failure\n"
            "... then on the next run: all CUDA-capable devices are busy or unavailable\n")
    found = classify_all(text)
    assert [m.id for m in found][:2] == ["cuda-launch-failure", "gpu-busy-or-unavailable"]
    assert ("follows", "cuda-launch-failure") in found[1].why
    # the other order is no after-effect: busy first, a launch failure later is its own problem
    later = "all CUDA-capable devices are busy or unavailable\nlater: unspecified launch failure\n"
    assert classify_error(later).id == "gpu-busy-or-unavailable"


def test_a_half_updated_driver_outranks_the_gpu_init_failure_it_causes():
    text = ("[ 12.014918] NVRM: API mismatch: the client has the version 570.153.02, but\n"
            "               NVRM: this kernel module has the version 570.144.  Please\n"
            "[ 23.991672] NVRM: GPU 0000:07:00.0: RmInitAdapter failed! (0x61:0x56:1770)\n")
    assert _id(text) == "driver-library-mismatch"
    assert _id("[ 903.610907] NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792)") == "driver-no-devices"


def test_a_row_whose_literals_are_absent_runs_no_pattern(monkeypatch):
    """Counted work, not time (issue 28 added rows; a short paste must not pay for them): the row-level literal
    pre-filter leaves only the rows whose literals the paste holds to run a regular expression."""
    from cudaenv.explain import rank as R
    from cudaenv.explain import table as T

    ran = []
    real = R._occurrence
    monkeypatch.setattr(R, "_occurrence", lambda pattern, view, context, *window: ran.append(pattern) or real(pattern, view, context, *window))
    assert classify_error("Traceback (most recent call last):\nRuntimeError: CUDA error: out of memory").id == "cuda-oom"
    total = sum(len(r.patterns) for r in T.rows())
    assert len(ran) <= 12 < total, (len(ran), total)
    assert all(r.literals for r in T.rows() if r.id in ("cuda-library-missing", "dist-port-in-use", "nccl-error"))


def test_a_message_retyped_with_one_word_missing_or_mistyped():
    m = classify_error("RuntimeError: CUDA error: all CUDA-capable devices are busy unavailable")  # "or" missing
    assert m.id == "gpu-busy-or-unavailable" and m.confidence == "medium"
    assert ("fuzzy", "") in m.why
    m = classify_error("RuntimeError: Found no NVIDIA drvier on your system. Please check that you have an NVIDIA GPU")
    assert m.id == "no-driver" and m.matched == "Found no NVIDIA drvier on your system"
    # the phrase's words scattered through a sentence, or two words wrong, are not the message
    assert classify_error("I think all devices are busy today or unavailable for me") is None
    assert classify_error("RuntimeError: Found no AMD drvier on your system") is None


def test_not_cuda_is_said_for_other_forms_of_the_same_devices():
    for text, flag in (("error: device offline", "is_adb"), ("adb: error: device 'emulator-5554' not found", "is_adb"),
                       ("2: ens33: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1500 qdisc fq_codel state DOWN", "is_network"),
                       ("rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat", "is_rocm"),
                       ("MIOpen(HIP): Error [Compile] 'hiprtcCompileProgram' naive_conv.cpp", "is_rocm")):
        m = classify_error(text)
        assert m.id == "not-cuda" and flag in dict(m.values), text
    assert _id("RuntimeError: CUDA error: device offline") != "not-cuda"  # adb's words inside a CUDA message


def test_a_retyped_message_in_a_long_one_line_blob_is_found_with_work_bounded_by_the_phrase(monkeypatch):
    """Counted work, not time: a megabyte of one message repeated on one line (a hostile or runaway paste) took a
    minute, the retyped-phrase search tokenising the whole line for every phrase; now it tokenises a window around
    each place that holds the phrase's longest words, and still finds a retyped message inside a long line."""
    from cudaenv.explain import fuzzy

    noise = "x=1 " * 20_000
    m = classify_error(noise + "RuntimeError: Found no NVIDIA drvier on your system. Please check " + noise)
    assert m is not None and m.id == "no-driver" and m.matched == "Found no NVIDIA drvier on your system"
    tokenised = []
    real = fuzzy._fits
    monkeypatch.setattr(fuzzy, "_fits", lambda tokens, words: tokenised.append(len(tokens)) or real(tokens, words))
    blob = "The NVIDIA driver on your system is too old (found " * 20_000  # 1 MB, one line
    classify_error(blob)
    assert tokenised and max(tokenised) < 200 and sum(tokenised) < 200 * fuzzy.MAX_LINES * 4, (max(tokenised), sum(tokenised))


def test_the_prefilter_lower_casing_keeps_offsets_and_every_case_equal_of_an_ascii_letter():
    """T.lowered on any text: one character for one (fuzzy and the views take offsets in it), and every character
    re.IGNORECASE matches with an ASCII letter lower-cases to that letter (else the pre-filter would skip a row a
    pattern matches)."""
    import re

    from cudaenv.explain import table as T

    everything = "".join(map(chr, range(0x110000)))
    low = T.lowered(everything)
    assert len(low) == len(everything)
    for m in re.finditer(r"(?i)[a-z]", everything):
        assert low[m.start()] == m.group().lower() or re.fullmatch("(?i)" + low[m.start()], m.group()), hex(ord(m.group()))
        assert low[m.start()] in "abcdefghijklmnopqrstuvwxyz", hex(ord(m.group()))


def test_every_literal_that_is_not_ascii_is_of_a_script_without_case():
    """The pre-filter compares literals with T.lowered text: a literal with a cased letter outside ASCII (Greek sigma
    has two lower forms) could miss a text re.IGNORECASE matches, so the table holds none."""
    from cudaenv.explain import table as T

    literals = set()
    for row in T.rows():
        literals.update(row.literals)
        for group in row.prefilter:
            literals.update(group)
        literals.update(n for n in row.needles if n)
    cased = sorted({c for lit in literals for c in lit if not c.isascii() and (c.lower() != c or c.upper() != c)})
    assert cased == [], cased
    assert any(not lit.isascii() for lit in literals)  # (the Chinese rows' literals are there, and were checked)


def test_a_chinese_paste_is_prefiltered_too(monkeypatch):
    """Counted work: a paste with Chinese text ran every pattern (the pre-filter read only ASCII text), a megabyte
    of it for seconds; now only the rows whose literals it holds run."""
    from cudaenv.explain import rank as R
    from cudaenv.explain import table as T

    ran = []
    real = R._occurrence
    monkeypatch.setattr(R, "_occurrence", lambda pattern, view, context, *window: ran.append(pattern) or real(pattern, view, context, *window))
    m = classify_error("训练时报错：\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n" + "日志 " * 10_000)
    assert m is not None and m.id == "cuda-oom"
    total = sum(len(r.patterns) for r in T.rows())
    assert len(ran) <= 12 < total, (len(ran), total)


# issue 29: a generic failure whose diagnosis the library prints after it. XLA's two lines as jax-ml/jax#25822 printed
# them (tests/corpus/threads/tuned/jax-cuinit-unknown-then-dso-mismatch.txt), timestamps cut.
XLA_UNKNOWN_THEN_DSO = (
    "E external/xla/xla/stream_executor/cuda/cuda_driver.cc:152] failed call to cuInit: INTERNAL: CUDA error: Failed "
    "call to cuInit: CUDA_ERROR_UNKNOWN: unknown error\n"
    "E external/xla/xla/stream_executor/cuda/cuda_diagnostics.cc:262] kernel version 535.129.3 does not match DSO "
    "version 545.23.8 -- cannot find working devices in this configuration\n")


def test_a_diagnosis_printed_after_a_generic_failure_is_its_cause():
    found = classify_all(XLA_UNKNOWN_THEN_DSO)
    assert [m.id for m in found][:2] == ["driver-library-mismatch", "cuda-unknown-error"]
    assert dict(found[0].values) == {"client_version": "545.23.8", "kernel_version": "535.129.3"}
    assert ("explained-after", "driver-library-mismatch") in found[1].why
    # the generic line alone is still read as it is, and a cause the 'order: any' row does not name stays second
    assert _id(XLA_UNKNOWN_THEN_DSO.splitlines()[0]) == "cuda-unknown-error"
    later_oom = XLA_UNKNOWN_THEN_DSO.splitlines()[0] + "\nRuntimeError: CUDA error: out of memory\n"
    assert _id(later_oom) == "cuda-unknown-error"


def test_only_an_order_any_row_takes_a_cause_printed_after_it(monkeypatch):
    """The rule is the table's, not this paste's: without the 'order: any' row the effect printed first wins, as
    before; an ordinary after row (gpu-busy-or-unavailable) still needs its cause above it."""
    from cudaenv.explain import rank as R

    real = R.rules()
    monkeypatch.setattr(R, "rules", lambda: real._replace(anywhere={}))
    assert _id(XLA_UNKNOWN_THEN_DSO) == "cuda-unknown-error"
    assert "cuda-unknown-error" in real.anywhere and "gpu-busy-or-unavailable" not in real.anywhere


def test_jax_version_checks_name_the_library_and_both_versions():
    m = classify_error("CUDA backend failed to initialize: Found cuBLAS version 120103, but JAX was built against "
                       "version 120205, which is newer. The copy of cuBLAS that is installed must be at least as new")
    assert m.id == "jax-cuda-library-too-old"
    assert dict(m.values) == {"library": "cuBLAS", "runtime": "120103", "compiled": "120205"}
    assert any('pip install -U "jax[cuda12]"' in a for a in m.advice)
    # the newer wording (jax_plugins/cuda/__init__.py _make_msg), as jax-ml/jax#18027 pasted it
    m = classify_error("Outdated cuSPARSE installation found.\nVersion JAX was built against: 12200\n"
                       "Minimum supported: 12100\nInstalled version: 12002\n")
    assert m.id == "jax-cuda-library-too-old"
    assert dict(m.values)["minimum"] == "12100" and any("12100" in d for d in m.details)
    # cuDNN keeps its own row (another cuDNN found first), in either wording
    assert _id("Found cuDNN version 8700, but JAX was built against version 8904, which is newer.") \
        == "cudnn-version-mismatch"
    assert _id("Outdated cuDNN installation found.\nVersion JAX was built against: 8907") == "cudnn-version-mismatch"


def test_jax_could_not_load_a_library_and_its_cpu_fallback_is_the_effect():
    # constructed from jax_plugins/cuda/__init__.py: initialize() logs the failed check, then xla_bridge warns that
    # no CUDA-enabled jaxlib is installed (the order jax-ml/jax#30050 shows)
    text = ("RuntimeError: Unable to load cuSPARSE. Is it installed?\n"
            "WARNING:jax._src.xla_bridge:794] An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib "
            "is not installed. Falling back to cpu.\n")
    found = classify_all(text)
    assert [m.id for m in found][:2] == ["jax-cuda-library-not-loaded", "framework-cpu-build"]
    assert dict(found[0].values)["library"] == "cuSPARSE"
    assert _id("CUDA backend failed to initialize: Unable to load cuDNN. Is it installed?") == "cudnn-not-loaded"
    m = classify_error("RuntimeError: jaxlib/cuda/versions_helpers.cc:54: operation cufftGetVersion(&version) "
                       "failed: cuFFT internal error")
    assert m.id == "jax-cuda-library-not-loaded" and "cufftGetVersion failed: cuFFT internal error" in m.details
    # cuInit's failure on the same helper line is no library load (framework-no-gpu-seen reads it)
    assert _id("RuntimeError: jaxlib/cuda/versions_helpers.cc:113: operation cuInit(0) failed: CUDA_ERROR_NO_DEVICE") \
        != "jax-cuda-library-not-loaded"


def test_a_jax_plugin_of_another_release_is_said_with_both_versions():
    m = classify_error("RuntimeError: Unable to initialize backend 'cuda': INVALID_ARGUMENT: Mismatched PJRT plugin "
                       "PJRT API version (0.54) and framework PJRT API version 0.51).")
    assert m.id == "jax-plugin-mismatch"
    assert "The plugin speaks PJRT API 0.54; this jaxlib speaks 0.51." in m.details
    m = classify_error("RuntimeWarning: JAX plugin jax_cuda12_plugin version 0.7.2 is installed, but it is not "
                       "compatible with the installed jaxlib version 0.7.1, so it will not be used.")
    assert m.id == "jax-plugin-mismatch"
    assert dict(m.values)["plugin_version"] == "0.7.2" and dict(m.values)["jaxlib_version"] == "0.7.1"
    assert _id("INVALID_ARGUMENT: Unexpected PJRT_FFI_UserData_Add_Args size: expected 48, got 40. The plugin is "
               "likely built with a later version than the framework.") == "jax-plugin-mismatch"
