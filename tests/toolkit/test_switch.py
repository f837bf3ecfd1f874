"""The pure switch planner: which toolkit a spec names, and the exact environment change."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cudaenv.toolkit import switch
from cudaenv.model.snapshot import Toolkit
from cudaenv.toolkit.select import SelectError, looks_like_path, select_toolkit
from cudaenv.toolkit.switch import plan_auto, plan_off, plan_use


def tk(version, path, **kw):
    kw.setdefault("source", "/usr/local/cuda-*")
    kw.setdefault("lib_dir", "lib64")
    return Toolkit(version=version, path=path, **kw)


T118 = tk("11.8.89", "/usr/local/cuda-11.8")
T121 = tk("12.1.105", "/usr/local/cuda-12.1")
T124 = tk("12.4.131", "/usr/local/cuda-12.4", is_link_target=True)
T1210 = tk("12.10.2", "/opt/cuda-12.10")
ALL = [T118, T121, T124, T1210]
BASE_PATH = "/home/u/.local/bin:/usr/bin:/bin"


def test_major_picks_newest_minor_numerically():
    assert select_toolkit(ALL, "12") is T1210  # 12.10 is newer than 12.4
    assert select_toolkit(ALL, "12.4") is T124
    assert select_toolkit(ALL, "12.1.105") is T121
    assert select_toolkit(ALL, "11") is T118


def test_newest_patch_of_a_minor():
    a = tk("12.1.66", "/opt/a")
    b = tk("12.1.105", "/opt/b")
    assert select_toolkit([a, b], "12.1") is b


def test_system_is_the_link_target_and_paths_match_normalised():
    assert select_toolkit(ALL, "system") is T124
    assert select_toolkit(ALL, "/usr/local/cuda-12.1/") is T121
    with pytest.raises(SelectError):
        select_toolkit([T118], "system")


def test_unknown_and_ambiguous_errors_list_the_installed_toolkits():
    with pytest.raises(SelectError) as exc:
        select_toolkit(ALL, "12.3")
    assert exc.value.toolkits == tuple(ALL)
    from cudaenv.render.switch import render_installed

    listing = render_installed(exc.value.toolkits)
    for t in ALL:
        assert t.path in listing and t.version in listing
    twin = tk("12.4.131", "/sw/cuda/12.4")
    with pytest.raises(SelectError) as exc:
        select_toolkit(ALL + [twin], "12.4")
    assert "ambiguous" in exc.value.message
    assert {t.path for t in exc.value.candidates} == {T124.path, twin.path}
    with pytest.raises(SelectError):
        select_toolkit(ALL, "latest; rm -rf /")
    with pytest.raises(SelectError):
        select_toolkit([], "12")


def test_use_sets_homes_puts_bin_and_lib_first_and_saves_previous_homes():
    env = {"PATH": BASE_PATH, "CUDA_HOME": "/opt/old"}
    change = plan_use(ALL, "12.1", env)
    new = change.apply(env)
    assert new["CUDA_HOME"] == new["CUDA_PATH"] == T121.path
    assert new["PATH"] == "/usr/local/cuda-12.1/bin:" + BASE_PATH
    assert new["LD_LIBRARY_PATH"] == "/usr/local/cuda-12.1/lib64"
    assert new["CUDAENV_ACTIVE"] == T121.path
    assert new["CUDAENV_SAVED_CUDA_HOME"] == "/opt/old"
    assert "CUDAENV_SAVED_CUDA_PATH" not in new
    assert change.message == "CUDA 12.1.105 at /usr/local/cuda-12.1"


def test_use_removes_every_other_toolkits_entries_and_the_link():
    env = {
        "PATH": "/usr/local/cuda/bin:/usr/local/cuda-11.8/bin:/usr/bin:/usr/local/cuda-12.4/nvvm/bin:/opt/cuda-12.10/bin/:/bin",
        "LD_LIBRARY_PATH": "/usr/local/cuda/lib64:/usr/local/cuda-11.3/lib64:/opt/mylib:/usr/local/cuda-11.8/extras/CUPTI/lib64",
    }
    new = plan_use(ALL, "12.1", env).apply(env)
    assert new["PATH"] == "/usr/local/cuda-12.1/bin:/usr/bin:/bin"
    # /usr/local/cuda-11.3 is not installed any more: its entry is left-over residue and goes too
    assert new["LD_LIBRARY_PATH"] == "/usr/local/cuda-12.1/lib64:/opt/mylib"


def test_not_a_prefix_of_another_name():
    env = {"PATH": "/usr/local/cuda-12.10/bin:/usr/local/cudatools/bin:/bin"}
    t = tk("12.1.105", "/usr/local/cuda-12.1")
    new = plan_use([t], "12.1", env, link=None).apply(env)
    assert new["PATH"] == "/usr/local/cuda-12.1/bin:/usr/local/cuda-12.10/bin:/usr/local/cudatools/bin:/bin"


def test_twice_is_the_same_and_switching_replaces():
    env = {"PATH": BASE_PATH, "CUDA_PATH": "/x"}
    once = plan_use(ALL, "12.1", env).apply(env)
    assert plan_use(ALL, "12.1", once).apply(once) == once
    assert not plan_use(ALL, "12.1", once)  # nothing left to change
    other = plan_use(ALL, "11.8", once).apply(once)
    assert other["PATH"] == "/usr/local/cuda-11.8/bin:" + BASE_PATH
    assert other["LD_LIBRARY_PATH"] == "/usr/local/cuda-11.8/lib64"
    assert other["CUDAENV_SAVED_CUDA_PATH"] == "/x"  # saved once, from before cudaenv


def test_off_restores_the_environment_from_before():
    env = {"PATH": BASE_PATH, "CUDA_HOME": "/opt/old", "LD_LIBRARY_PATH": "/opt/mylib"}
    a = plan_use(ALL, "12.1", env).apply(env)
    b = plan_use(ALL, "12.4", a).apply(a)
    off = plan_off(ALL, b).apply(b)
    assert off == env


def test_off_unsets_an_ld_library_path_that_becomes_empty():
    env = {"PATH": BASE_PATH}
    on = plan_use(ALL, "12", env).apply(env)
    change = plan_off(ALL, on)
    assert ("LD_LIBRARY_PATH", None) in change.changes
    assert change.apply(on) == env


def test_off_without_cudaenv_keeps_the_users_cuda_home():
    env = {"PATH": "/usr/local/cuda/bin:/bin", "CUDA_HOME": "/usr/local/cuda"}
    new = plan_off(ALL, env).apply(env)
    assert new == {"PATH": "/bin", "CUDA_HOME": "/usr/local/cuda"}


def test_shared_prefix_toolkits_are_never_cut_out_of_path():
    distro = tk("11.5.119", "/usr", source="distro", install_method="deb", lib_dir=None, nvcc="/usr/bin/nvcc")
    conda = tk("12.4.99", "/home/u/miniconda3/envs/x", source="conda", install_method="conda", lib_dir="lib")
    env = {"PATH": "/home/u/miniconda3/envs/x/bin:/usr/bin:/bin", "CONDA_PREFIX": "/home/u/miniconda3/envs/x"}
    new = plan_use([distro, conda, T121], "12.1", env).apply(env)
    assert new["PATH"] == "/usr/local/cuda-12.1/bin:/home/u/miniconda3/envs/x/bin:/usr/bin:/bin"
    # switching to the conda toolkit and back only takes back the entry cudaenv put in front
    c = plan_use([distro, conda, T121], "12.4", env).apply(env)
    assert c["PATH"] == "/home/u/miniconda3/envs/x/bin:/home/u/miniconda3/envs/x/bin:/usr/bin:/bin"
    assert plan_use([distro, conda, T121], "12.4", c).apply(c) == c
    assert plan_off([distro, conda, T121], c).apply(c)["PATH"] == env["PATH"]


def test_windows_paths_case_insensitive_and_no_ld_library_path():
    root = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"
    a = tk("12.1.105", root + "\\v12.1", lib_dir="lib\\x64", source="Program Files", install_method="windows-installer")
    b = tk("11.8.89", root + "\\v11.8", lib_dir="lib\\x64", source="Program Files", install_method="windows-installer")
    env = {
        "Path": root.lower() + "\\v11.8\\bin;" + root + "\\v11.8\\libnvvp;C:\\Windows\\system32",
        "CUDA_PATH": root + "\\v11.8",
        "ProgramFiles": "C:\\Program Files",
    }
    change = plan_use([a, b], "12.1", env, system="windows", link=None)
    d = change.as_dict()
    assert d["PATH"] == root + "\\v12.1\\bin;C:\\Windows\\system32"
    assert "LD_LIBRARY_PATH" not in d
    assert d["CUDA_PATH"] == root + "\\v12.1"
    assert d["CUDAENV_SAVED_CUDA_PATH"] == root + "\\v11.8"


def test_a_toolkit_path_with_the_path_separator_is_refused():
    bad = tk("12.1.105", "/opt/cuda:12.1")
    with pytest.raises(SelectError) as exc:
        plan_use([bad], "12.1", {"PATH": "/bin"})
    assert "PATH cannot hold" in exc.value.message


def test_version_file_parsing():
    assert switch.parse_version_file("# project toolkit\n\n  12.1  \n11.8\n") == "12.1"
    assert switch.parse_version_file("# nothing\n") is None


def test_version_file_with_other_tools_settings():
    # zocrit/cudup (src/commands/local.rs@77cc170): the version on the first line, then `key=value` settings it reads
    # (cudnn=) or ignores; cudaenv reads the same file without taking a setting for a toolkit spec
    assert switch.parse_version_file("12.4.1\ncudnn=9.1.0\n") == "12.4.1"
    assert switch.parse_version_file("# pinned by cudup\n12.4.1\ncudnn = 9.1.0\nnccl=2.21\n") == "12.4.1"
    assert switch.parse_version_file("cudnn=9.1.0\n12.6\n") == "12.6"  # a setting first is skipped, not the spec
    assert switch.parse_version_file("cudnn=9.1.0\ncuda=12.6\n") == "12.6"  # only settings: cuda= names the toolkit
    assert switch.parse_version_file("cudnn=9.1.0\n") is None  # no toolkit named: none, never "cudnn=9.1.0"
    assert switch.parse_version_file("/opt/cuda=12\n") == "/opt/cuda=12"  # a path with '=' is still a path


def test_read_version_file_of_cudup(tmp_path):
    from cudaenv.toolkit.project import read_version_file

    path = tmp_path / ".cuda-version"
    path.write_text("12.4.1\ncudnn=9.1.0\n")
    assert read_version_file(str(path)) == "12.4.1"


def test_auto_enters_and_leaves_back_to_what_was_active():
    env = {"PATH": BASE_PATH}
    manual = plan_use(ALL, "11.8", env).apply(env)
    inside = plan_auto(ALL, manual, ("/p/.cuda-version", "12.4")).apply(manual)
    assert inside["CUDAENV_ACTIVE"] == T124.path
    assert inside["CUDAENV_AUTO"] == "/p/.cuda-version"
    assert inside["CUDAENV_AUTO_PREV"] == T118.path
    other = plan_auto(ALL, inside, ("/q/.cuda-version", "12.1")).apply(inside)
    assert other["CUDAENV_AUTO_PREV"] == T118.path  # still what came before the first project
    back = plan_auto(ALL, other, None).apply(other)
    assert back == manual
    assert not plan_auto(ALL, back, None)  # outside any project and not auto-switched: nothing


def test_auto_leaving_with_nothing_before_switches_off():
    env = {"PATH": BASE_PATH}
    inside = plan_auto(ALL, env, ("/p/.cuda-version", "12.1")).apply(env)
    assert inside["CUDAENV_AUTO_PREV"] == ""
    assert plan_auto(ALL, inside, None).apply(inside) == env


def test_completion_words():
    words = switch.completion_words(ALL)
    assert words[:2] == ["12.10", "12.10.2"]
    assert "11.8" in words and "system" in words


entry = st.sampled_from(
    ["/usr/bin", "/bin", "/usr/local/cuda/bin", "/usr/local/cuda-11.8/bin", "/usr/local/cuda-12.1/bin", "/opt/x", "", "/home/u/bin",
     "/usr/local/cuda-12.4/lib64", "/opt/cuda-12.10/bin"]
)
paths = st.lists(entry, max_size=8).map(":".join)


@settings(max_examples=200)
@given(path=paths, ld=st.one_of(st.none(), paths), spec=st.sampled_from(["11", "12", "12.1", "12.4", "system"]),
       home=st.one_of(st.none(), st.just("/opt/h")))
def test_property_idempotent_exact_and_reversible(path, ld, spec, home):
    env = {"PATH": path}
    if ld is not None:
        env["LD_LIBRARY_PATH"] = ld
    if home:
        env["CUDA_HOME"] = home
    once = plan_use(ALL, spec, env).apply(env)
    assert plan_use(ALL, spec, once).apply(once) == once
    chosen = select_toolkit(ALL, spec)
    entries = once["PATH"].split(":")
    assert entries[0] == chosen.path + "/bin"
    assert all(not e.startswith(("/usr/local/cuda", "/opt/cuda-")) for e in entries[1:])
    off = plan_off(ALL, once).apply(once)
    assert off.get("CUDA_HOME") == home
    assert "CUDAENV_ACTIVE" not in off
    assert all(not e.startswith(("/usr/local/cuda", "/opt/cuda-")) for e in off["PATH"].split(":") if e)


def test_off_with_nothing_to_undo_says_so():
    change = plan_off(ALL, {"PATH": BASE_PATH})
    assert change.changes == ()
    assert "nothing to undo" in change.message


@settings(max_examples=300)
@given(text=st.text())
def test_property_version_file_parser_takes_any_text(text):
    spec = switch.parse_version_file(text)
    assert spec is None or (spec == spec.strip() and spec and not spec.startswith("#"))
    assert spec is None or spec in text


@settings(max_examples=300)
@given(spec=st.one_of(st.text(max_size=30), st.from_regex(r"\A\d{1,2}(\.\d{1,3}){0,2}\Z")))
def test_property_select_toolkit_returns_a_toolkit_or_raises_select_error(spec):
    for system in ("linux", "windows"):
        try:
            found = select_toolkit(ALL, spec, system)
        except SelectError as exc:
            assert exc.message and exc.toolkits  # the error always lists what is installed
        else:
            assert found in ALL
        assert isinstance(switch.version_key(spec), tuple)
        assert looks_like_path(spec) in (True, False)


def test_a_version_spec_names_versions_part_by_part():
    from cudaenv.toolkit.select import names_version

    assert names_version("12", "12.4.131") and names_version("12.1", "12.1.105") and names_version("12.1.105", "12.1.105")
    assert not names_version("12.1", "12.10.1") and not names_version("12.1.1", "12.1") and not names_version("13", "12.4")
    assert not names_version("12.4", None)
