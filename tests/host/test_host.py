"""The Host seam: paths read inside the root, links followed inside it, commands as values."""


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import TOOLS
from cudaenv.host import Host, host_from_environment
from cudaenv.host.process import CommandResult
from cudaenv.core.errors import UserError


def test_absolute_link_targets_resolve_inside_the_root(fake_root):
    fake_root.toolkit("12.4.131")
    fake_root.link("usr/local/cuda", "/usr/local/cuda-12.4")
    host = fake_root.host()
    assert host.resolve("/usr/local/cuda") == "/usr/local/cuda-12.4"
    assert host.is_dir("/usr/local/cuda/bin")
    assert host.read_text("/usr/local/cuda/version.json").count("12.4.131") == 1


def test_relative_and_chained_links(fake_root):
    fake_root.toolkit("12.1.1")
    fake_root.link("etc/alternatives/cuda", "/usr/local/cuda-12.1")
    fake_root.link("usr/local/cuda", "/etc/alternatives/cuda")
    fake_root.link("usr/local/cuda-rel", "cuda-12.1")
    host = fake_root.host()
    assert host.resolve("/usr/local/cuda") == "/usr/local/cuda-12.1"
    assert host.resolve("/usr/local/cuda-rel") == "/usr/local/cuda-12.1"
    assert host.readlink("/usr/local/cuda") == "/etc/alternatives/cuda"


def test_dangling_and_looping_links_resolve_to_none(fake_root):
    fake_root.link("usr/local/cuda", "/usr/local/cuda-11.8")
    fake_root.link("opt/a", "/opt/b")
    fake_root.link("opt/b", "/opt/a")
    host = fake_root.host()
    assert host.resolve("/usr/local/cuda") is None
    assert host.resolve("/opt/a") is None
    assert host.listdir("/opt/a") == []
    assert host.lexists("/usr/local/cuda") and not host.exists("/usr/local/cuda")


def test_unroot_is_the_inverse_of_path(fake_root):
    host = fake_root.host()
    real = host.path("/usr/local/cuda-12.4/bin/nvcc")
    assert str(real).startswith(str(fake_root.path))
    assert host.unroot(real) == "/usr/local/cuda-12.4/bin/nvcc"


def test_windows_paths_map_drive_letters_into_the_root(fake_root):
    fake_root.file("C/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v12.1/version.json", "{}")
    host = fake_root.host(system="windows")
    p = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.1"
    assert host.listdir(p) == ["version.json"]
    assert host.unroot(host.path(p)) == p


def test_missing_program_is_a_value(fake_root):
    result = fake_root.host().run(["definitely-not-a-program-xyz"])
    assert result.error == "missing" and not result.ok
    assert result.describe() == "definitely-not-a-program-xyz was not found"


def test_nonzero_exit_is_a_value(fake_root, fake_bin):
    fake_bin.command("nvidia-smi", stdout="NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", exit_code=9)
    result = fake_root.host(path=fake_bin.env_path).run(["nvidia-smi"])
    assert result.returncode == 9 and result.error is None and not result.ok
    assert "couldn't communicate" in result.describe()


def test_a_hanging_command_is_killed_at_the_timeout(fake_root, fake_bin):
    fake_bin.command("nvidia-smi", stdout="never\n", sleep=30)
    host = fake_root.host(path=fake_bin.env_path, timeout=0.5)
    result = host.run(["nvidia-smi"])
    assert result.error == "timeout"  # the command sleeps 30 s: only the runner's 0.5 s can end it so
    assert result.describe() == "nvidia-smi timed out after 0.5 s"


def test_undecodable_output_is_replaced_not_raised(fake_root, fake_bin, tmp_path):
    script = fake_bin.path / "garbage"
    script.write_bytes(b"#!/bin/sh\nprintf '\\377\\376ok'\n")
    script.chmod(0o755)
    result = fake_root.host(path=fake_bin.env_path).run(["garbage"])
    assert result.ok and result.undecodable and result.stdout.endswith("ok")


def test_which_uses_the_real_path_and_which_in_root_the_image(fake_root, fake_bin):
    fake_bin.command("nvidia-smi", stdout="x")
    fake_root.toolkit("12.4.131")
    host = fake_root.host(path="/usr/local/cuda-12.4/bin:" + fake_bin.env_path)
    assert host.which("nvidia-smi") == str(fake_bin.path / "nvidia-smi")
    assert host.which_in_root("nvcc") == "/usr/local/cuda-12.4/bin/nvcc"


def test_bad_root_is_a_user_error(tmp_path):
    with pytest.raises(UserError) as info:
        host_from_environment({}, root=str(tmp_path / "nope"))
    assert "not a directory" in info.value.message and info.value.hint


def test_root_from_environment(tmp_path):
    host = host_from_environment({"CUDAENV_ROOT": str(tmp_path), "CUDAENV_TIMEOUT": "2.5"})
    assert host.root == tmp_path and host.timeout == 2.5 and host.rooted


@settings(max_examples=200)
@given(st.text())
def test_resolve_never_raises_on_any_path(fake_root_text):
    host = Host(root="/nonexistent-cudaenv-root", env={})
    assert host.resolve(fake_root_text) is None or isinstance(host.resolve(fake_root_text), str)


def test_command_result_describe_mentions_first_output_line():
    r = CommandResult(("nvidia-smi",), 18, "Failed to initialize NVML: Driver/library version mismatch\n")
    assert r.describe() == "nvidia-smi exited with status 18: Failed to initialize NVML: Driver/library version mismatch"


@pytest.mark.real_machine
def test_read_text_reads_proc_files_that_refuse_large_reads():
    # /proc/sys files answer ENOMEM to one 4 MiB read on some kernels; the Host reads in chunks.
    import os

    if not os.path.exists("/proc/sys/kernel/osrelease"):
        pytest.skip("no /proc here")
    text = Host(root="/", env={}).read_text("/proc/sys/kernel/osrelease")
    assert text is not None and text.strip() == os.uname().release


def test_read_text_respects_the_limit(fake_root):
    fake_root.file("big.txt", "x" * 200000)
    assert len(fake_root.host().read_text("/big.txt", limit=70000)) == 70000


def test_path_entries_inside_the_root_are_named_as_the_image_names_them(fake_root):
    fake_root.toolkit("11.8.89")
    real_bin = str(fake_root / "usr/local/cuda-11.8/bin")
    host = fake_root.host(path=real_bin + ":" + TOOLS)
    assert host.which_all_in_root("nvcc") == ["/usr/local/cuda-11.8/bin/nvcc"]


def test_a_path_already_inside_the_root_resolves_to_the_images_name(fake_root):
    # CUDA_HOME written by `cudaenv use --root` names the toolkit by its real path inside the root.
    fake_root.toolkit("12.1.105")
    host = fake_root.host()
    assert host.resolve(str(fake_root / "usr/local/cuda-12.1")) == "/usr/local/cuda-12.1"


def test_cuda_home_inside_the_root_is_the_same_toolkit_not_a_twin(fake_root):
    from cudaenv.probes.toolkits import probe_toolkits

    fake_root.toolkit("12.1.105")
    state = probe_toolkits(fake_root.host(env={"CUDA_HOME": str(fake_root / "usr/local/cuda-12.1")}), [])
    assert [(t.path, t.is_cuda_home) for t in state.toolkits] == [("/usr/local/cuda-12.1", True)]


# ------------------------------------------------------------------ resolve under the real root: kernel and walk agree
_NAMES = ("a", "b", "c", "l1", "l2")
_TARGETS = st.lists(st.sampled_from(_NAMES + (".", "..", "nope", "f")), min_size=1, max_size=4)
_NODE = st.one_of(st.just(("dir",)), st.just(("file",)), st.tuples(st.just("rel"), _TARGETS), st.tuples(st.just("abs"), _TARGETS))


@pytest.mark.skipif(not __import__("cudaenv.host.resolve", fromlist=["KERNEL_RESOLVE"]).KERNEL_RESOLVE, reason="Linux only")
def test_the_kernels_reading_of_links_is_the_walks(tmp_path):
    """Under the real root `resolve` asks the kernel (open O_PATH + /proc/self/fd); for any tree of folders, files and
    relative, absolute, dangling and looping links, and any path through it ("." and ".." and a trailing "/"
    included, which go to the walk), it answers what the component walk answers; and so do exists, is_dir, is_file,
    listdir and read_bytes, which give the kernel the path itself."""
    import itertools
    import os

    from cudaenv.host.resolve import kernel_may_resolve as _kernel_may_resolve

    counter = itertools.count()
    host = Host("/")
    kernel_answered = []

    @settings(max_examples=150)
    @given(st.dictionaries(st.tuples(st.sampled_from(("", "a", "b", "a/b")), st.sampled_from(_NAMES)), _NODE, max_size=10),
           st.lists(st.lists(st.sampled_from(_NAMES + (".", "..", "f", "x")), max_size=5), min_size=1, max_size=6),
           st.booleans())
    def check(tree, queries, trailing):
        base = tmp_path / str(next(counter))
        base.mkdir()
        for (folder, name), node in sorted(tree.items()):
            where = base / folder
            if not where.is_dir():
                continue  # its parent was made a file or a link
            path = where / name
            if path.exists() or path.is_symlink():
                continue
            if node[0] == "dir":
                path.mkdir()
            elif node[0] == "file":
                path.write_text("x")
            else:
                target = "/".join(node[1])
                os.symlink(target if node[0] == "rel" else str(base) + "/" + target, path)
        for parts in queries:
            p = str(base) + "".join("/" + x for x in parts) + ("/" if trailing and parts else "")
            got, walked = host.resolve(p), host._walk(p)
            assert got == walked, (p, got, walked)
            kernel_answered.append(_kernel_may_resolve(p))
            # the tests of a file hand such a path to the kernel as it is (Host._as_is): the answers of the walk
            assert host.exists(p) == (walked is not None and os.path.exists(walked)), p
            assert host.is_dir(p) == (walked is not None and os.path.isdir(walked)), p
            assert host.is_file(p) == (walked is not None and os.path.isfile(walked)), p
            assert host.listdir(p) == (sorted(os.listdir(walked)) if walked and os.path.isdir(walked) else []), p
            assert host.read_bytes(p) == (b"x" if walked and os.path.isfile(walked) else None), p

    check()
    assert True in kernel_answered and False in kernel_answered  # both readings were exercised


def test_a_link_through_a_missing_or_file_component_then_dotdot_leads_nowhere(tmp_path):
    """The kernel reads ``b/..`` only when b is a folder: a link ``a -> b/..`` with no b (or b a file) dangles, and the
    walk used under --root says so too (it read ``b/..`` as ``.``; found by the property test above)."""
    import os

    from cudaenv.host.resolve import KERNEL_RESOLVE

    os.symlink("b/..", str(tmp_path / "a"))
    (tmp_path / "f").write_text("x")
    os.symlink("f/..", str(tmp_path / "g"))
    host = Host("/")
    for name in ("a", "g"):
        p = str(tmp_path / name)
        assert host._walk(p) is None, name
        if KERNEL_RESOLVE:
            assert host.resolve(p) is None, name
    (tmp_path / "b").mkdir()
    assert host._walk(str(tmp_path / "a")) == str(tmp_path)
