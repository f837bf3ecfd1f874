"""`cudaenv checkpoint fix` writing hostile or odd places, on hand-built checkpoints (no torch): a device node as OUT
(it was replaced by a regular file), a link (it was replaced by a file: now its target is written and the link kept),
a storage key that is a path (it was copied into the new archive as an entry name), a nesting deeper than the writer
goes and a full disk (a RecursionError and an OSError traceback: now one line), the temporary copy a killed fix
leaves (nothing removed it), a file named ``-rf.pt`` in the advice (the printed command did not paste), and pickles
that share tuples (2^N leaves written: now each shared tuple once, through the memo)."""

import os
import sys
import zipfile

import pytest

import checkpoint_builders as cb
from cudaenv.checkpoint.analyze import inspect_file
from builders import CHILD_CWD


def cnn_file(tmp_path, name="a.pt", **kw):
    src = tmp_path / name
    src.write_bytes(cb.torch_zip(cb.cnn("cuda:2", **kw)))
    return src


def test_a_device_node_as_out_is_refused_and_left_alone(tmp_path, cli):
    """A null device of the test's own (never the system's /dev/null: the old code replaced the node it was given)."""
    import stat

    src = cnn_file(tmp_path)
    node = tmp_path / "null"
    try:
        os.mknod(str(node), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError, AttributeError):
        pytest.skip("cannot make a device node here (not root)")
    res = cli("checkpoint", "fix", str(src), "-o", str(node), "--map-location", "cpu")
    assert res.code == 2 and "character device" in res.err and "Traceback" not in res.err
    assert stat.S_ISCHR(os.lstat(str(node)).st_mode)


def test_a_fifo_as_out_is_refused(tmp_path, cli):
    src = cnn_file(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(str(fifo))
    res = cli("checkpoint", "fix", str(src), "-o", str(fifo), "--map-location", "cpu")
    assert res.code == 2 and "FIFO" in res.err and not fifo.is_file()


def test_in_place_on_a_link_rewrites_the_target_and_keeps_the_link(tmp_path, cli):
    real = cnn_file(tmp_path, "real.pt", prefix="module.")
    old = real.read_bytes()
    link = tmp_path / "link.pt"
    link.symlink_to(real)
    res = cli("checkpoint", "fix", str(link), "--in-place", "--strip-prefix", "module.")
    assert res.code == 0, res.err
    assert link.is_symlink() and os.readlink(str(link)) == str(real)
    assert "is a link: its target" in res.out
    assert (tmp_path / "real.pt.bak").read_bytes() == old
    assert not inspect_file(str(real)).prefixes


def test_out_that_is_a_link_writes_the_target(tmp_path, cli):
    src = cnn_file(tmp_path)
    target = tmp_path / "target.pt"
    target.write_bytes(b"older")
    link = tmp_path / "out.pt"
    link.symlink_to(target)
    res = cli("checkpoint", "fix", str(src), "-o", str(link), "--map-location", "cpu")
    assert res.code == 0, res.err
    assert link.is_symlink() and inspect_file(str(target)).weights_only is True


def test_a_link_to_nothing_is_refused(tmp_path, cli):
    src = cnn_file(tmp_path)
    link = tmp_path / "out.pt"
    link.symlink_to(tmp_path / "missing" / "x.pt")
    res = cli("checkpoint", "fix", str(src), "-o", str(link), "--map-location", "cpu")
    assert res.code == 2 and "does not exist" in res.err and link.is_symlink()


def test_a_storage_key_that_is_a_path_is_renumbered(tmp_path, cli):
    sd = cb.state_dict([("w", cb.Tensor(cb.Storage("../../x", 2), (2,))), ("v", cb.Tensor(cb.Storage("7", 3), (3,)))])
    src = tmp_path / "dots.pt"
    src.write_bytes(cb.torch_zip(sd))
    out = tmp_path / "out.pt"
    res = cli("checkpoint", "fix", str(src), "-o", str(out), "--map-location", "cpu")
    assert res.code == 0, res.err
    names = zipfile.ZipFile(str(out)).namelist()
    assert "out/data/0" in names and "out/data/1" in names and not any(".." in n for n in names)
    assert "renumbered" in res.out
    with zipfile.ZipFile(str(out)) as zf:  # the bytes moved with their storage
        assert zf.read("out/data/0") == cb.pattern("../../x", 8) and zf.read("out/data/1") == cb.pattern("7", 12)


def deep_zip(levels):
    """A state_dict whose second value is a dict nested ``levels`` deep (written without Python's recursion)."""
    head = cb.dumps(cb.state_dict([("w", cb.Tensor(cb.Storage("0", 2), (2,)))]))
    assert head.endswith(b".")
    body = head[:-1]
    # the OrderedDict is on the stack: SETITEM 'n' -> {'n': {'n': ...}}
    nest = b"X\x01\x00\x00\x00n" + b"}(X\x01\x00\x00\x00n" * levels + b"}" + b"u" * levels + b"s"
    return cb.torch_zip(None, data_pkl=body + nest + b".", extra=[("archive/data/0", cb.pattern("0", 8))])


def test_a_very_deep_dict_is_one_line_not_a_recursion_error(tmp_path, cli):
    src = tmp_path / "deep.pt"
    src.write_bytes(deep_zip(600))
    res = cli("checkpoint", "fix", str(src), "-o", str(tmp_path / "out.pt"), "--map-location", "cpu")
    assert res.code == 2 and "Traceback" not in res.err and "RecursionError" not in res.err
    assert "nested" in res.err and "Traceback" not in res.err and res.err.startswith("cudaenv: error:")  # one error, wrapped at 80 columns
    assert not (tmp_path / "out.pt").exists()


def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, cli, monkeypatch):
    from cudaenv.checkpoint import rewrite

    src = cnn_file(tmp_path)

    def full(self, name, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(rewrite.ZipOut, "write_bytes", full)
    res = cli("checkpoint", "fix", str(src), "-o", str(tmp_path / "out.pt"), "--map-location", "cpu")
    assert res.code == 1 and "No space left on device" in " ".join(res.err.split()) and "Traceback" not in res.err  # wrapped at 80
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pt"]


def test_a_killed_fixs_temporary_copy_is_removed_by_the_next(tmp_path, cli):
    from cudaenv.core.fs import _host_tag

    src = cnn_file(tmp_path)
    here = _host_tag()
    stale = tmp_path / (".out.pt.%s-%d.abcd1234.cudaenv-tmp" % (here, _dead_pid()))
    stale.write_bytes(b"x" * 1000)
    live = tmp_path / (".out.pt.%s-%d.efgh5678.cudaenv-tmp" % (here, os.getppid()))  # a running process's: kept
    live.write_bytes(b"y")
    elsewhere = tmp_path / (".out.pt.other-machine-%d.ijkl9012.cudaenv-tmp" % _dead_pid())  # another host's: kept
    elsewhere.write_bytes(b"w")
    other = tmp_path / ".notes.txt.cudaenv-tmp"  # not named as a fix names them: kept
    other.write_bytes(b"z")
    res = cli("checkpoint", "fix", str(src), "-o", str(tmp_path / "out.pt"), "--map-location", "cpu")
    assert res.code == 0, res.err
    assert not stale.exists() and live.exists() and elsewhere.exists() and other.exists()
    assert "removed 1 temporary file" in res.out + res.err


def test_a_fix_killed_while_writing_leaves_a_copy_the_next_one_removes(tmp_path, cli):
    """A real SIGKILL in the middle of the copy (a child process writing through atomic_binary, killed)."""
    import signal
    import subprocess

    src = cnn_file(tmp_path)
    code = ("import sys, time; from cudaenv.core.fs import atomic_binary\n"
            "with atomic_binary(sys.argv[1]) as fh:\n    fh.write(b'x' * 4096); fh.flush(); print('ready', flush=True); time.sleep(60)\n")
    p = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "out.pt")], stdout=subprocess.PIPE, cwd=CHILD_CWD)
    assert p.stdout.readline().strip() == b"ready"
    p.send_signal(signal.SIGKILL)
    p.wait()
    left = [n.name for n in tmp_path.iterdir() if n.name.endswith(".cudaenv-tmp")]
    assert len(left) == 1 and ("-%d." % p.pid) in left[0]
    res = cli("checkpoint", "fix", str(src), "-o", str(tmp_path / "out.pt"), "--map-location", "cpu")
    assert res.code == 0, res.err
    assert not [n for n in tmp_path.iterdir() if n.name.endswith(".cudaenv-tmp")]


def _dead_pid():
    import subprocess

    p = subprocess.Popen([sys.executable, "-c", "pass"], cwd=CHILD_CWD)
    p.wait()
    return p.pid


def test_advice_for_a_file_named_like_an_option_pastes(tmp_path, monkeypatch):
    from cudaenv.checkpoint.report import VisibleGpus

    src = cnn_file(tmp_path, "-rf.pt", prefix="module.")
    monkeypatch.chdir(tmp_path)
    r = inspect_file("-rf.pt", VisibleGpus(0, (), "no nvidia-smi"))
    lines = [a for a in r.advice if "cudaenv checkpoint fix" in a]
    assert lines and all(a.endswith("-o ./-rf.fixed.pt -- -rf.pt") for a in lines)
    assert src.exists()


def test_advice_commands_parse_as_the_cli_parses_them(tmp_path, cli, monkeypatch):
    """The printed line, run as it is (from the file's folder), does what it says."""
    import shlex

    from cudaenv.checkpoint.report import VisibleGpus

    cnn_file(tmp_path, "-rf.pt", prefix="module.")
    monkeypatch.chdir(tmp_path)
    r = inspect_file("-rf.pt", VisibleGpus(0, (), "no nvidia-smi"))
    line = [a for a in r.advice if a.startswith("both in one rewrite: ")][0]
    argv = shlex.split(line[len("both in one rewrite: "):])
    assert argv[:3] == ["cudaenv", "checkpoint", "fix"]
    res = cli(*argv[1:])
    assert res.code == 0, res.err
    fixed = inspect_file("-rf.fixed.pt")
    assert not fixed.prefixes and {d.device for d in fixed.devices} == {"cpu"}


@pytest.mark.parametrize("levels", [12, 20])
def test_shared_tuples_are_written_once(tmp_path, cli, levels):
    t = (1,)
    for _ in range(levels):
        t = (t, t)
    sd = cb.state_dict([("w", cb.Tensor(cb.Storage("0", 2), (2,))), ("t", t)])
    src = tmp_path / "tup.pt"
    src.write_bytes(cb.torch_zip(sd))
    out = tmp_path / "out.pt"
    res = cli("checkpoint", "fix", str(src), "-o", str(out), "--map-location", "cpu")
    assert res.code == 0, res.err
    with zipfile.ZipFile(str(out)) as zf:
        written = len(zf.read("out/data.pkl"))
    with zipfile.ZipFile(str(src)) as zf:
        read = len(zf.read("archive/data.pkl"))
    assert written <= 2 * read + 200  # linear in what was read (it was 2^levels leaves)


def test_a_memoized_long_string_named_many_times_is_written_once(tmp_path, cli):
    key = "k" * 4096
    sd = cb.state_dict([("w", cb.Tensor(cb.Storage("0", 2), (2,))), ("names", [key] * 500)])
    src = tmp_path / "s.pt"
    src.write_bytes(cb.torch_zip(sd))
    out = tmp_path / "out.pt"
    res = cli("checkpoint", "fix", str(src), "-o", str(out), "--map-location", "cpu")
    assert res.code == 0, res.err
    with zipfile.ZipFile(str(out)) as zf:
        assert len(zf.read("out/data.pkl")) < 2 * 4096 + 500 * 8


def test_fix_never_exits_0_with_an_output_its_verdict_does_not_call_safe(tmp_path, cli, monkeypatch):
    from cudaenv.checkpoint import fix
    from cudaenv.model.record import replace

    real = fix._inspect_written
    monkeypatch.setattr(fix, "_inspect_written", lambda tmp, visible: replace(real(tmp, visible), verdict="inconclusive"))
    src = cnn_file(tmp_path)
    res = cli("checkpoint", "fix", str(src), "-o", str(tmp_path / "out.pt"), "--map-location", "cpu")
    assert res.code == 1 and "did not check out" in res.err and "inconclusive" in res.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pt"]


def test_a_trusted_rewrite_that_is_not_safe_is_not_exit_0(tmp_path, cli, monkeypatch):
    """--trust: what torch wrote is inspected too (it was exit 0 unchecked): a result naming os.system is written as
    asked, said, and exit 1."""
    from cudaenv.checkpoint import fix

    src = tmp_path / "whole.pt"
    src.write_bytes(cb.torch_zip(cb.Reduce(cb.glob("__main__", "CNN"), ())))

    def fake_torch(host, python, timeout, path, tmp, opts):
        with open(tmp, "wb") as fh:
            fh.write(cb.torch_zip({"w": cb.Reduce(cb.glob("os", "system"), ("true",))}))
        return ["storages mapped to cpu"]

    monkeypatch.setattr(fix, "_trusted_fix", fake_torch)
    res = cli("checkpoint", "fix", str(src), "-o", str(tmp_path / "out.pt"), "--map-location", "cpu", "--trust")
    assert res.code == 1 and "still needs torch.load(weights_only=False)" in res.out and "verdict unsafe" in res.out


def test_strip_prefix_never_puts_a_value_over_another(tmp_path, cli):
    """A decoy ``module.fc.weight`` beside the real ``fc.weight``: the real one stays (the decoy was stripped onto it,
    and the later one won when loaded), and the change says so."""
    sd = cb.state_dict([("fc.weight", cb.Tensor(cb.Storage("0", 2), (2,))),
                        ("module.fc.weight", cb.Tensor(cb.Storage("1", 2), (2,))),
                        ("module.fc.bias", cb.Tensor(cb.Storage("2", 1), (1,)))])
    src = tmp_path / "decoy.pt"
    src.write_bytes(cb.torch_zip(sd))
    out = tmp_path / "out.pt"
    res = cli("checkpoint", "fix", str(src), "-o", str(out), "--strip-prefix", "module.")
    assert res.code == 0, res.err
    assert "kept as they were" in res.out and "module.fc.weight" in res.out
    r = inspect_file(str(out), with_tensors=True)
    assert [(t.key, t.storage) for t in r.tensor_list] == [("fc.weight", "0"), ("module.fc.weight", "1"), ("fc.bias", "2")]
