"""`cudaenv use VERSION` on many toolkits: the folders are matched by name first, and the switch it plans is the one
reading every toolkit gives (cudaenv.probes.toolkits.named, cudaenv.toolkit.project.load_toolkits)."""

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from builders import FakeRoot
from cudaenv.probes.toolkits.named import name_version, probe_toolkits_named
from cudaenv.toolkit.project import load_toolkits
from cudaenv.toolkit.select import SelectError, select_toolkit
from cudaenv.toolkit.switch import plan_switch


def test_name_version_reads_the_names_a_toolkit_folder_has():
    assert name_version("12.4") == (12, 4)
    assert name_version("12.4.131") == (12, 4, 131)
    assert name_version("cuda-12.4") == (12, 4)
    assert name_version("CUDA12.4") == (12, 4)
    assert name_version("cuda_v11.8.89") == (11, 8, 89)
    assert name_version("v12.1") == (12, 1)
    for other in ("cuda", "12", "cuda-12", "cuda-12.4.bak", "12..4", "12.4.", "", "\uff11\uff12.4", "cuda-\u00b2.4",
                  "12.4-old", "1234567890.1", "1.2.3.4.5.6.7"):
        assert name_version(other) is None, other


def switch(host, spec, env, named):
    """The change `use SPEC` plans, with the toolkits load_toolkits gives (named: only what SPEC needs)."""
    toolkits, link, chosen = load_toolkits(host, spec if named else None)
    try:
        toolkit = select_toolkit(toolkits, spec, host.system)
    except SelectError as exc:
        assert chosen is None
        return ("error", exc.message, exc.kind)
    assert chosen is None or chosen is toolkit  # load_toolkits' own pick, when it made one, is the pick
    change = plan_switch(toolkit, toolkits, env, host.system, link)
    return (change.changes, change.message)


VERSIONS = ["11.8.89", "12.1.105", "12.1.66", "12.4.131", "12.4.99", "12.6.20", "13.0.88"]
NAMES = st.sampled_from(["mm", "full", "cuda-mm", "odd", "empty", "link"])


@st.composite
def trees(draw):
    folders = draw(st.lists(st.tuples(st.sampled_from(VERSIONS), NAMES), min_size=1, max_size=8))
    spec = draw(st.sampled_from(["11", "12", "12.1", "12.4", "12.4.131", "12.4.99", "13.0", "14"]))
    on_path = draw(st.lists(st.integers(0, 7), max_size=3))
    local = draw(st.booleans())
    active = draw(st.one_of(st.none(), st.integers(0, 7)))
    return folders, spec, on_path, local, active


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(trees())
@example(([("12.4.99", "mm"), ("12.4.99", "mm")], "12.4.99", [], False, None))  # (found: 12.4 and 12.4-dup1 hold the spec)
def test_named_toolkits_plan_the_switch_every_toolkit_plans(tree):
    """Whatever the tree (folders named for the version they hold, named for nothing, empty, links to others; PATH,
    LD_LIBRARY_PATH and CUDAENV_ACTIVE naming some of them, as image paths or this machine's), the switch planned with
    the toolkits the spec needs is the one planned with every toolkit, and so is the error."""
    folders, spec, on_path, local, active = tree
    with tempfile.TemporaryDirectory() as tmp:
        root = FakeRoot(Path(tmp))
        paths = []
        for i, (version, how) in enumerate(folders):
            mm = ".".join(version.split(".")[:2])
            name = {"mm": mm, "full": version, "cuda-mm": "cuda-" + mm, "odd": "tk%d" % i, "empty": "%s" % mm,
                    "link": "l%d-%s" % (i, mm)}[how]
            if name in [p.rsplit("/", 1)[-1] for p in paths]:
                name = "%s-dup%d" % (name, i)  # a name the tree already has: named for nothing
            if how == "empty":
                root.dir("sw/cuda/" + name)
            elif how == "link" and paths:
                root.link("sw/cuda/" + name, paths[0])
            else:
                root.toolkit(version, where="sw/cuda", name=name)
            paths.append("/sw/cuda/" + name)
        shown = [(str(root.path) + p if local else p) for p in paths]
        bins = [shown[i % len(shown)] + "/bin" for i in on_path]
        env = {"CUDAENV_TOOLKITS": "/sw/cuda", "PATH": ":".join(bins + ["/usr/bin", "/bin"]),
               "LD_LIBRARY_PATH": ":".join(shown[i % len(shown)] + "/lib64" for i in on_path)}
        if active is not None:
            env["CUDAENV_ACTIVE"] = shown[active % len(shown)]
        host = root.host(env=env, path=env["PATH"])
        assert switch(host, spec, host.env, named=True) == switch(host, spec, host.env, named=False)


def test_a_thousand_toolkits_read_only_the_newest_named_for_the_spec(fake_root):
    """`use 12.4` on a tree of 1,000 toolkits reads the toolkits named 12.4.x (and those PATH names), not the others."""
    versions = ["%d.%d.%d" % (10 + i % 4, (i // 4) % 10, 100 + i // 40) for i in range(1000)]
    base = fake_root / "sw/cuda"
    for version in versions:  # the markers only: a version.json is what each toolkit is read by
        (base / version / "bin").mkdir(parents=True)
        (base / version / "version.json").write_text('{"cuda": {"version": "%s"}}' % version)
    env = {"CUDAENV_TOOLKITS": "/sw/cuda", "PATH": "/sw/cuda/11.3.110/bin:/usr/bin"}
    host = fake_root.host(env=env, path=env["PATH"])
    state = probe_toolkits_named(host, "12.4", ["/sw/cuda/11.3.110/bin", "/usr/bin"])
    read = sorted(tk.version for tk in state.toolkits)
    assert read == sorted(["11.3.110"] + [v for v in versions if v.startswith("12.4.")])
    assert len(read) == 26
    assert select_toolkit(state.toolkits, "12.4").version == "12.4.124"


def test_a_folder_named_for_a_version_it_does_not_hold_reads_every_toolkit(fake_root):
    fake_root.toolkit("12.1.105", where="sw/cuda", name="12.4")  # named 12.4, holds 12.1
    fake_root.toolkit("12.4.131", where="sw/cuda", name="newest")
    host = fake_root.host(env={"CUDAENV_TOOLKITS": "/sw/cuda"})
    assert probe_toolkits_named(host, "12", []) is None  # the name lies: the caller reads every toolkit
    toolkits, _link, _chosen = load_toolkits(host, "12")
    assert select_toolkit(toolkits, "12").version == "12.4.131"


def test_what_the_names_are_trusted_for(fake_root):
    """The one answer that differs from reading every toolkit: a folder named for an older version than it holds is
    taken at its name while a folder named for the spec holds the answer (its name is read, its files are not)."""
    fake_root.toolkit("12.4.131", where="sw/cuda", name="12.1")
    fake_root.toolkit("12.4.99", where="sw/cuda", name="12.4")
    host = fake_root.host(env={"CUDAENV_TOOLKITS": "/sw/cuda"})
    toolkits, _link, _chosen = load_toolkits(host, "12.4")
    assert [tk.version for tk in toolkits] == ["12.4.99"]
    every, _link, _chosen = load_toolkits(host)
    assert select_toolkit(every, "12.4").version == "12.4.131"


def test_a_thousand_toolkits_make_a_candidate_only_for_the_folders_read(fake_root, monkeypatch):
    """Counted work, not time (issue 35): `use 12.4` on a tree of 1,000 toolkits reads the 1,000 names once and makes
    a candidate (a path, a key, a resolved folder) only for the 25 folders named 12.4.x and the one PATH names; reading
    every folder's candidate was a thousand objects and a thousand key lookups on `use`'s start-up path."""
    from cudaenv.probes.toolkits import candidate as candidate_module

    versions = ["%d.%d.%d" % (10 + i % 4, (i // 4) % 10, 100 + i // 40) for i in range(1000)]
    base = fake_root / "sw/cuda"
    for version in versions:
        (base / version / "bin").mkdir(parents=True)
        (base / version / "version.json").write_text('{"cuda": {"version": "%s"}}' % version)
    (base / "README").parent.mkdir(parents=True, exist_ok=True)
    (base / "README").write_text("not a folder: never a candidate\n")
    made = []
    real_init = candidate_module.ToolkitCandidate.__init__

    def counting(self, path, *args, **kwargs):
        made.append(path)
        real_init(self, path, *args, **kwargs)

    monkeypatch.setattr(candidate_module.ToolkitCandidate, "__init__", counting)
    env = {"CUDAENV_TOOLKITS": "/sw/cuda", "PATH": "/sw/cuda/11.3.110/bin:/usr/bin"}
    host = fake_root.host(env=env, path=env["PATH"])
    state = probe_toolkits_named(host, "12.4", ["/sw/cuda/11.3.110/bin", "/usr/bin"])
    assert select_toolkit(state.toolkits, "12.4").version == "12.4.124"
    from_tree = sorted(p.rsplit("/", 1)[1] for p in made if p.startswith("/sw/cuda/"))
    assert from_tree == sorted(["11.3.110"] + [v for v in versions if v.startswith("12.4.")])
    assert len(made) - len(from_tree) <= 4  # the other places: /opt/cuda and the two links (none of them here)


def _two_toolkits_and_a_project(fake_root):
    """Toolkits 12.4 and 12.1 under the root's /sw/cuda (folders named for them) and a project whose .cuda-version
    names 12.4: (the project folder, the environment `use` runs in there, under the root: its PATH is the root's)."""
    fake_root.toolkit("12.4.131", where="sw/cuda", name="12.4")
    fake_root.toolkit("12.1.105", where="sw/cuda", name="12.1")
    project = fake_root.path / "project"
    project.mkdir()
    (project / ".cuda-version").write_text("12.4\n")
    return project, {"CUDAENV_TOOLKITS": "/sw/cuda", "PATH": "/usr/bin", "CUDAENV_ROOT": str(fake_root.path), "PWD": str(project)}


def test_use_picks_the_toolkit_once(fake_root, cli, monkeypatch):
    """Counted work (issue 35): `use 12.4` (and the hook's `use --auto` on a .cuda-version naming 12.4) picks the
    toolkit once: load_toolkits' pick among the toolkits the names chose is the one the switch takes, under --root too
    (the pick mapped into the root with the other toolkits)."""
    from cudaenv.toolkit import select

    project, env = _two_toolkits_and_a_project(fake_root)
    picks = []
    real = select.select_toolkits

    def counting(*args, **kwargs):
        picks.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(select, "select_toolkits", counting)
    for argv in (["use", "12.4", "--shell", "bash"], ["use", "--auto", "--shell", "bash"]):
        picks.clear()
        monkeypatch.chdir(project)
        result = cli(*argv, env=env)
        assert result.code == 0, result.err
        assert "%s/sw/cuda/12.4/bin" % fake_root.path in result.out
        assert picks == ["12.4"], (argv, picks)
    host = fake_root.host(env={"CUDAENV_TOOLKITS": "/sw/cuda"})
    toolkits, _link, chosen = load_toolkits(host, "12.1")
    assert chosen is not None and chosen in toolkits and chosen.path == host.local("/sw/cuda/12.1")
    assert load_toolkits(host, "/sw/cuda/12.1")[2] is None  # a path spec: the caller picks


def test_use_in_a_project_reads_only_the_toolkits_its_version_file_names(fake_root, cli, monkeypatch):
    """Counted work (issue 35, review): `cudaenv use` with no version, in a project whose .cuda-version names 12.4,
    matches the folders by name as `use 12.4` does; it read every toolkit before (the spec was read after the load)."""
    from cudaenv.probes import toolkits as toolkits_module

    project, env = _two_toolkits_and_a_project(fake_root)
    every = []
    real = toolkits_module.probe_toolkits

    def counting(*args, **kwargs):
        every.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(toolkits_module, "probe_toolkits", counting)
    monkeypatch.chdir(project)
    for argv in (["use", "--shell", "bash"], ["use", "12.4", "--shell", "bash"], ["use", "--auto", "--shell", "bash"]):
        result = cli(*argv, env=env)
        assert result.code == 0, result.err
        assert "%s/sw/cuda/12.4/bin" % fake_root.path in result.out
    assert every == []  # each read only the folders named 12.4 (and none PATH names)
    (project / ".cuda-version").write_text("13.0\n")  # names no toolkit here: every toolkit is read, to list them
    result = cli("use", "--shell", "bash", env=env)
    assert result.code != 0 and "12.4" in result.err and len(every) == 1
