"""The first fix fits the context the paste (and, with --probe, the machine) shows (issue 28, cudaenv.explain.fit).
Each test fails on the code before issue 28: the same cause got the same first fix everywhere."""

from cudaenv.explain import classify_all, classify_error
from cudaenv.explain.fit import machine_contexts

NOT_COMPILED = ('Traceback (most recent call last):\n  File "infer.py", line 12, in <module>\n    model = model.cuda()\n'
                'AssertionError: Torch not compiled with CUDA enabled\n')
LOST = "Unable to determine the device handle for GPU 0000:01:00.0: Unknown Error\n"


def test_the_cpu_on_purpose_is_not_told_to_install_a_cuda_build():
    for shown in ("$ python infer.py --cpu\n", "I set device='cpu' on purpose\n",
                  "my laptop only has Intel(R) UHD Graphics 620\n"):
        m = classify_error(shown + NOT_COMPILED)
        assert m.id == "torch-cpu-only" and m.variant == "cpu-on-purpose", shown
        assert not any("recommend" in a or "cudaenv fix" in a for a in m.advice), m.advice
    assert classify_error(NOT_COMPILED).variant is None  # nothing said: a CUDA build is the first fix
    assert classify_error("Running on a MacBook Pro M2 --cpu\n" + NOT_COMPILED).variant == "macos"  # a Mac first


def test_a_lost_gpu_in_a_container_a_vgpu_and_a_laptop_is_not_first_a_loose_card():
    cases = {"root@3f1c2a9b8d7e:/workspace# nvidia-smi\n": "container",
             "Device 0: GRID A100D-16C, compute capability 8.0\n": "vgpu",
             "NVIDIA GeForce RTX 3060 Laptop GPU\n": "laptop"}
    for head, context in cases.items():
        m = classify_error(head + LOST)
        assert m.id == "gpu-lost" and m.variant == context, head
        assert "loose card" not in m.explanation or "not" in m.explanation
    plain = classify_error(LOST)
    assert plain.variant is None and any("power cables" in a for a in plain.advice)


def test_the_machine_shows_a_context_the_paste_does_not():
    assert machine_contexts("darwin", None) == ("macos",) and machine_contexts("linux", "docker") == ("container",)
    m = classify_all(LOST, machine_contexts("linux", "docker"))[0]
    assert m.variant == "container"
    assert classify_all(NOT_COMPILED, machine_contexts("darwin", None))[0].variant == "macos"


def test_no_kernel_image_in_a_packages_prebuilt_kernels_is_that_packages_build():
    text = ('  File "/env/lib/python3.10/site-packages/flash_attn/flash_attn_interface.py", line 51, in _flash_attn_forward\n'
            "    out, q, k, v = flash_attn_cuda.fwd(\nRuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    m = classify_error(text)
    assert m.id == "gpu-arch-unsupported" and m.variant == "third-party-kernels"
    assert any("TORCH_CUDA_ARCH_LIST" in a for a in m.advice)


def test_a_minor_nvcc_warning_is_said_to_be_a_warning_and_ranks_after_an_error():
    warning = ("/env/lib/python3.10/site-packages/torch/utils/cpp_extension.py:415: UserWarning: The detected CUDA version "
               "(12.1) has a minor version mismatch with the version that was used to compile PyTorch (12.4). Most likely "
               "this shouldn't be a problem.\n")
    m = classify_error(warning)
    assert m.id == "nvcc-torch-mismatch" and m.confidence == "medium" and m.title.startswith("a warning only")
    found = classify_all(warning + "nvcc fatal   : Unsupported gpu architecture 'compute_89'\n")
    assert [x.id for x in found][:2] == ["nvcc-arch-unsupported", "nvcc-torch-mismatch"]
    major = classify_error("RuntimeError:\nThe detected CUDA version (11.8) mismatches the version that was used to compile\n"
                           "PyTorch (12.4). Please make sure to use the same CUDA versions.")
    assert major.id == "nvcc-torch-mismatch" and major.confidence == "high" and not major.title.startswith("a warning")
