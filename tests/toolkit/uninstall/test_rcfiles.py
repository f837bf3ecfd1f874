"""Shell startup lines naming a toolkit: which are found, how each is taken out, and the line editor itself."""

import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cudaenv.toolkit.uninstall.rcfiles import EDIT_LINES_CODE, RcLine, classify, edit_args, find_lines, mentions, probe_rc_lines
from builders import CHILD_CWD

T = "/usr/local/cuda-11.8"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("export PATH=/usr/local/cuda-11.8/bin:$PATH", True),
        ("export CUDA_HOME=/usr/local/cuda-11.8", True),
        ("export PATH=/usr/local/cuda-11.80/bin:$PATH", False),
        ("export PATH=/usr/local/cuda-11.8.bak/bin:$PATH", False),
        ("export PATH=/usr/local/cuda/bin:$PATH", False),
        ('PATH="/usr/bin:/usr/local/cuda-11.8"', True),
    ],
)
def test_mentions(text, expected):
    assert mentions(text, T) is expected


@pytest.mark.parametrize(
    "line, action, new",
    [
        ("export PATH=/usr/local/cuda-11.8/bin:$PATH", "remove", None),
        ("export LD_LIBRARY_PATH=/usr/local/cuda-11.8/lib64${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}", "remove", None),
        ("# CUDA 11.8 from /usr/local/cuda-11.8", "remove", None),
        ("[ -d /usr/local/cuda-11.8 ] && export PATH=/usr/local/cuda-11.8/bin:$PATH", "remove", None),
        ("if [ -d /usr/local/cuda-11.8 ]; then export PATH=/usr/local/cuda-11.8/bin:$PATH; fi", "remove", None),
        ("set -gx PATH /usr/local/cuda-11.8/bin $PATH", "remove", None),
        ("export PATH=/opt/tools/bin:/usr/local/cuda-11.8/bin:$PATH", "rewrite", "export PATH=/opt/tools/bin:$PATH"),
        ('PATH="/usr/bin:/usr/local/cuda-11.8/bin:/bin"', "rewrite", 'PATH="/usr/bin:/bin"'),
        ("if [ -d /usr/local/cuda-11.8 ]; then", "hand", None),
        ("for d in /usr/local/cuda-11.8/bin; do", "hand", None),
        ("alias nv='/usr/local/cuda-11.8/bin/nvcc -I/opt/inc'", "remove", None),
        ("alias nv='/usr/local/cuda-11.8/bin/nvcc --ccbin /opt/gcc/bin'", "hand", None),
    ],
)
def test_classify(line, action, new):
    got_action, got_new, reason = classify(line, "", (T,))
    assert (got_action, got_new) == (action, new)
    assert (reason is not None) == (action == "hand")


def test_lines_inside_blocks_and_continuations_are_by_hand():
    text = (
        "if [ -d /usr/local/cuda-11.8 ]; then\n"
        "  export PATH=/usr/local/cuda-11.8/bin:$PATH\n"
        "fi\n"
        "export X=1 \\\n"
        "  CUDA_HOME=/usr/local/cuda-11.8\n"
        "export PATH=/usr/local/cuda-11.8/bin:$PATH # if you need it\n"
        "foo() {\n"
        "  export CUDA_HOME=/usr/local/cuda-11.8\n"
        "}\n"
    )
    found = [(l.lineno, l.action) for l in find_lines("/f", text, (T,))]
    assert found == [(1, "hand"), (2, "hand"), (5, "hand"), (6, "remove"), (8, "hand")]


def test_probe_reads_the_listed_files(fake_root):
    fake_root.file("root/.bashrc", "export PATH=/usr/local/cuda-11.8/bin:$PATH\n")
    fake_root.file("root/.config/fish/config.fish", "set -gx PATH /usr/local/cuda-11.8/bin $PATH\n")
    fake_root.file("etc/profile.d/cuda.sh", "export CUDA_HOME=/usr/local/cuda-11.8\n")
    fake_root.file("etc/profile.d/cuda.csh", "setenv CUDA_HOME /usr/local/cuda-11.8\n")  # not a .sh: not read
    fake_root.file("root/.unrelated", "export CUDA_HOME=/usr/local/cuda-11.8\n")
    fake_root.link("root/.zshrc", "/nowhere")  # dangling dotfile link: skipped
    fake_root.dir("root/.profile")  # unreadable as a file: a note
    notes = []
    lines = probe_rc_lines(fake_root.host(), (T,), notes)
    assert sorted(l.file for l in lines) == ["/etc/profile.d/cuda.sh", "/root/.bashrc", "/root/.config/fish/config.fish"]
    assert any("/root/.profile" in n.message for n in notes)


def test_probe_reads_the_files_zdotdir_and_xdg_config_home_move(fake_root):
    """zsh reads $ZDOTDIR/.zshrc and fish $XDG_CONFIG_HOME/fish/config.fish, the files `cudaenv init --install` writes
    to: uninstall searched only ~/.zshrc and ~/.config/fish/config.fish, and missed a toolkit's lines there."""
    fake_root.file("root/.bashrc", "export PATH=/usr/local/cuda-11.8/bin:$PATH\n")
    fake_root.file("root/.zshrc", "export CUDA_HOME=/usr/local/cuda-11.8\n")  # searched too: ZDOTDIR may be set only in zsh
    fake_root.file("root/zsh/.zshrc", "export CUDA_HOME=/usr/local/cuda-11.8\n")
    fake_root.file("xdg/fish/config.fish", "set -gx PATH /usr/local/cuda-11.8/bin $PATH\n")
    env = {"ZDOTDIR": "/root/zsh", "XDG_CONFIG_HOME": str(fake_root.path / "xdg")}  # a path inside the fake root too
    host = fake_root.host(env)
    lines = probe_rc_lines(host, (T,), [])
    assert sorted(l.file for l in lines) == ["/root/.bashrc", "/root/.zshrc", "/root/zsh/.zshrc", "/xdg/fish/config.fish"]


def test_init_writes_the_hook_into_a_file_uninstall_searches(fake_root):
    """One rule (cudaenv.shells.startup) for both: the file each shell's hook goes into is searched by uninstall."""
    from cudaenv.shells import HOOK_SHELLS, get_shell
    from cudaenv.toolkit.uninstall.rcfiles import rc_files

    for env in ({}, {"ZDOTDIR": "/root/z"}, {"XDG_CONFIG_HOME": "/cfg"}, {"ZDOTDIR": "/z", "XDG_CONFIG_HOME": "/c"}):
        host = fake_root.host(dict(env, HOME="/root"))
        searched = rc_files(host)
        for name in HOOK_SHELLS:
            if name != "pwsh":  # its profile sets $env: lines of its own grammar, not a POSIX start-up file
                assert get_shell(name).rc_file(host.env, "linux") in searched, (name, env)
        assert {"/root/.bashrc", "/root/.zshrc", "/root/.config/fish/config.fish"} <= set(searched)


def run_editor(path, lines):
    return subprocess.run([sys.executable, "-c", EDIT_LINES_CODE, str(path), *edit_args(lines)], capture_output=True, text=True, timeout=30,
                          cwd=CHILD_CWD)


def test_editor_keeps_backup_and_crlf(tmp_path):
    f = tmp_path / "rc"
    f.write_bytes(b"a\r\nexport PATH=/usr/local/cuda-11.8/bin:$PATH\r\nPATH=/x:/usr/local/cuda-11.8/bin\r\nz")
    with open(f, newline="") as fh:
        lines = find_lines(str(f), fh.read(), (T,))
    res = run_editor(f, lines)
    assert res.returncode == 0, res.stderr
    assert f.read_bytes() == b"a\r\nPATH=/x\r\nz"
    assert (tmp_path / "rc.cudaenv-backup").read_bytes().startswith(b"a\r\nexport")
    f.write_text("export PATH=/usr/local/cuda-11.8/bin:$PATH\n")
    assert run_editor(f, find_lines(str(f), f.read_text(), (T,))).returncode == 0
    assert (tmp_path / "rc.cudaenv-backup.1").exists() and f.read_text() == ""


def test_editor_keeps_a_symlinked_dotfile_a_link(tmp_path):
    real = tmp_path / "dotfiles" / "bashrc"
    real.parent.mkdir()
    real.write_text("keep\nexport PATH=/usr/local/cuda-11.8/bin:$PATH\n")
    link = tmp_path / ".bashrc"
    os.symlink(real, link)
    assert run_editor(link, find_lines(str(link), link.read_text(), (T,))).returncode == 0
    assert link.is_symlink() and real.read_text() == "keep\n"


def test_editor_refuses_a_moved_line(tmp_path):
    f = tmp_path / "rc"
    f.write_text("export PATH=/usr/local/cuda-11.8/bin:$PATH\n")
    lines = find_lines(str(f), f.read_text(), (T,))
    f.write_text("# new first line\nexport PATH=/usr/local/cuda-11.8/bin:$PATH\n")
    res = run_editor(f, lines)
    assert res.returncode == 1 and "no longer reads" in res.stderr
    assert f.read_text().startswith("# new first line") and not (tmp_path / "rc.cudaenv-backup").exists()


@settings(max_examples=200)
@given(st.text())
def test_find_lines_never_raises(text):
    for line in find_lines("/f", text, (T, "/opt/cuda")):
        assert isinstance(line, RcLine) and line.action in ("remove", "rewrite", "hand")
        if line.action == "rewrite":
            assert not mentions(line.new_text, T) or not mentions(line.new_text, "/opt/cuda")


@settings(max_examples=60)
@given(st.lists(st.sampled_from(["export PATH=/usr/local/cuda-11.8/bin:$PATH", "alias ll='ls -l'", "", "x=1", "PATH=/a:/usr/local/cuda-11.8/lib"]), max_size=8))
def test_editor_removes_exactly_the_found_lines(tmp_path_factory, lines):
    f = tmp_path_factory.mktemp("ed") / "rc"
    text = "\n".join(lines) + "\n"
    f.write_text(text)
    found = find_lines(str(f), text, (T,))
    res = run_editor(f, found)
    assert res.returncode == 0, res.stderr
    expected = []
    rewrites = {l.lineno: l.new_text for l in found if l.action == "rewrite"}
    removes = {l.lineno for l in found if l.action == "remove"}
    for n, line in enumerate(text.split("\n"), 1):
        if n in removes:
            continue
        expected.append(rewrites.get(n, line))
    assert f.read_text() == "\n".join(expected)


def test_a_line_with_bytes_that_are_not_utf8_is_left_for_the_user(fake_root):
    """The plan reads text with replacement characters; the editor could never match such a line exactly."""
    fake_root.file("root/.bashrc", "")
    (fake_root / "root/.bashrc").write_bytes(b"export PATH=/usr/local/cuda-11.8/bin:$PATH # caf\xe9\nexport CUDA_HOME=/usr/local/cuda-11.8\n\xff\n")
    lines = probe_rc_lines(fake_root.host(), (T,), [])
    assert [(l.lineno, l.action) for l in lines] == [(1, "hand"), (2, "remove")]
    assert "not UTF-8" in lines[0].reason
    run = run_editor(fake_root / "root/.bashrc", [l for l in lines if l.action != "hand"])
    assert run.returncode == 0, run.stderr
    assert (fake_root / "root/.bashrc").read_bytes() == b"export PATH=/usr/local/cuda-11.8/bin:$PATH # caf\xe9\n\xff\n"
