"""`cudaenv link VERSION`: the printed commands for a plain link, alternatives, a writable /usr/local, and leftovers."""

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import TOOLS
from cudaenv.parse.dpkg import parse_alternatives as _parse_alternatives
from cudaenv.toolkit.link import LinkState, find_ld_mentions, find_rc_mentions, plan_link


def parse_alternatives(text):
    return _parse_alternatives(text)[1]  # the alternatives' paths

ALTERNATIVES = """manual
/usr/local/cuda

/usr/local/cuda-12.4
124
/usr/local/cuda-12.1
121
"""


def test_plain_link_with_and_without_sudo():
    state = LinkState("link", target="/usr/local/cuda-12.4", writable=False)
    assert plan_link("/usr/local/cuda-12.1", "12.1.105", state).commands == ("sudo ln -sfn /usr/local/cuda-12.1 /usr/local/cuda",)
    state = LinkState("missing", writable=True)
    assert plan_link("/usr/local/cuda-12.1", "12.1.105", state).commands == ("ln -sfn /usr/local/cuda-12.1 /usr/local/cuda",)


def test_alternatives_set_and_install_when_not_registered():
    state = LinkState("alternatives", "/usr/local/cuda-12.4", "cuda", parse_alternatives(ALTERNATIVES))
    assert state.registered == ("/usr/local/cuda-12.4", "/usr/local/cuda-12.1")
    assert plan_link("/usr/local/cuda-12.1", "12.1.105", state).commands == ("sudo update-alternatives --set cuda /usr/local/cuda-12.1",)
    plan = plan_link("/opt/cuda-11.8", "11.8.89", state)
    assert plan.commands == (
        "sudo update-alternatives --install /usr/local/cuda cuda /opt/cuda-11.8 118",
        "sudo update-alternatives --set cuda /opt/cuda-11.8",
    )


def test_already_there_a_real_folder_and_quoting():
    assert plan_link("/usr/local/cuda-12.4", "12.4", LinkState("link", "/usr/local/cuda-12.4")).commands == ()
    refused = plan_link("/usr/local/cuda-12.4", "12.4", LinkState("directory"))
    assert not refused.ok and refused.commands == () and "real folder" in refused.notes[0]
    odd = plan_link("/opt/cuda 12$(x)", "12.0", LinkState("missing", writable=True))
    assert odd.commands == ("ln -sfn '/opt/cuda 12$(x)' /usr/local/cuda",)


def test_rc_and_ld_mentions():
    rc = "# export CUDA_HOME=/usr/local/cuda-10.2\nexport CUDA_HOME=/usr/local/cuda-11.8\nexport PATH=/usr/local/cuda/bin:$PATH\nexport CUDA_HOME=/usr/local/cuda\nalias ll='ls -l'\n"
    assert find_rc_mentions("~/.bashrc", rc, "/usr/local/cuda-12.1") == ["~/.bashrc:2: export CUDA_HOME=/usr/local/cuda-11.8"]
    ld = "/usr/local/cuda-11.8/targets/x86_64-linux/lib\n/usr/local/cuda/lib64\n/usr/local/cuda-12.1/lib64\n"
    assert find_ld_mentions("/etc/ld.so.conf.d/cuda.conf", ld, "/usr/local/cuda-12.1") == [
        "/etc/ld.so.conf.d/cuda.conf:1: /usr/local/cuda-11.8/targets/x86_64-linux/lib"
    ]


@pytest.fixture
def root(fake_root):
    fake_root.toolkit("12.1.105")
    fake_root.toolkit("12.4.131")
    return fake_root


def test_cli_plain_link_in_a_writable_usr_local(root, cli):
    root.link("usr/local/cuda", "/usr/local/cuda-12.4")
    root.file("etc/ld.so.conf.d/cuda-11-8.conf", "/usr/local/cuda-11.8/lib64\n")
    root.file("etc/ld.so.conf.d/000_cuda.conf", "/usr/local/cuda/lib64\n")
    root.file("home/u/.bashrc", "export CUDA_HOME=/usr/local/cuda-11.8\nexport PATH=/usr/local/cuda-11.8/bin:$PATH\n")
    root.file("home/u/.profile", "export PATH=$HOME/bin:$PATH\n")
    res = cli("link", "12.1", "--root", str(root.path), env={"PATH": TOOLS, "HOME": "/home/u", "CUDA_HOME": "/opt/else"})
    assert res.code == 0, res.err
    writable = os.access(str(root.path / "usr/local"), os.W_OK)
    sudo = "" if writable else "sudo "
    # issue 13: under --root the commands act on the image (its link, its loader cache), never on this machine's
    r = str(root.path)
    assert res.out == "%sln -sfn /usr/local/cuda-12.1 %s/usr/local/cuda\n%sldconfig -r %s\n" % (
        sudo, r, "" if os.access(str(root.path / "etc"), os.W_OK) else "sudo ", r)
    assert "/usr/local/cuda inside %s" % r in " ".join(res.err.split())  # wrapped to 80 columns
    assert "/etc/ld.so.conf.d/cuda-11-8.conf:1: /usr/local/cuda-11.8/lib64" in res.err
    assert "/home/u/.bashrc:1: export CUDA_HOME=/usr/local/cuda-11.8" in res.err
    assert "/home/u/.bashrc:2:" in res.err
    assert ".profile" not in res.err
    assert "CUDA_HOME=/opt/else" in res.err


def test_cli_alternatives(root, cli):
    root.link("etc/alternatives/cuda", "/usr/local/cuda-12.4")
    root.link("usr/local/cuda", "/etc/alternatives/cuda")
    root.file("var/lib/dpkg/alternatives/cuda", ALTERNATIVES)
    res = cli("link", "12.1", "--root", str(root.path))
    # issue 13: update-alternatives here would change this machine's alternatives: refused with a note
    assert res.code == 1 and res.out == "", res
    assert "managed by update-alternatives" in res.err and "update-alternatives --set cuda /usr/local/cuda-12.1" in res.err


def test_cli_unknown_version_and_real_folder(root, cli):
    res = cli("link", "10.2", "--root", str(root.path))
    assert res.code == 1 and res.out == "" and "12.4.131" in res.err
    root.dir("usr/local/cuda/bin")
    res = cli("link", "12.1", "--root", str(root.path))
    assert res.code == 1 and res.out == "" and "real folder" in res.err

lines = st.lists(st.one_of(st.text(max_size=40), st.sampled_from(["", "auto", "manual", "/usr/local/cuda", "/usr/local/cuda-12.1", "121",
                                                                  "export CUDA_HOME=/usr/local/cuda-11.8", "CUDA_PATH=$X"])), max_size=12)


@settings(max_examples=300)
@given(text=lines.map("\n".join), toolkit=st.sampled_from(["/usr/local/cuda-12.1", "/opt/cuda", "/"]))
def test_property_link_parsers_take_any_text(text, toolkit):
    assert all(isinstance(p, str) and p for p in parse_alternatives(text))
    for line in find_rc_mentions("~/.bashrc", text, toolkit) + find_ld_mentions("/etc/ld.so.conf.d/x.conf", text, toolkit):
        assert line.startswith(("~/.bashrc:", "/etc/ld.so.conf.d/x.conf:")) and "\n" not in line


# ------------------------------------------------------------------ issue 13: sudo only when needed and present
def test_sudo_only_when_needed_and_present():
    state = LinkState("link", "/usr/local/cuda-12.4", writable=False)
    assert plan_link("/usr/local/cuda-12.1", "12.1", state, ldconfig=True).commands == (
        "sudo ln -sfn /usr/local/cuda-12.1 /usr/local/cuda", "sudo ldconfig")
    no_sudo = plan_link("/usr/local/cuda-12.1", "12.1", state, ldconfig=True, sudo_available=False)
    assert no_sudo.commands == ("ln -sfn /usr/local/cuda-12.1 /usr/local/cuda", "ldconfig")
    assert any("sudo is not installed here" in n for n in no_sudo.notes)
    root_user = plan_link("/usr/local/cuda-12.1", "12.1", LinkState("link", "/x", writable=True), ldconfig=True,
                          ldconfig_sudo=False, sudo_available=False)
    assert root_user.commands == ("ln -sfn /usr/local/cuda-12.1 /usr/local/cuda", "ldconfig") and root_user.notes == ()


def test_link_under_root_never_names_this_machines_link(root, cli):
    root.link("usr/local/cuda", "/usr/local/cuda-12.4")
    res = cli("link", "12.1", "--root", str(root.path))
    assert res.code == 0, res
    for line in res.out.splitlines():
        words = line.split()
        assert words[-1] != "/usr/local/cuda" and (words[0] != "ldconfig" or "-r" in words), line


def test_alternatives_priority_is_read_by_the_one_version_reader():
    from cudaenv.toolkit.link import _priority

    assert [_priority(v) for v in ("12.4.131", "11.8", "13", "v12.1", None, "", "unknown")] == [124, 118, 130, 121, 10, 10, 10]
    assert _priority("9" * 5000 + ".1") > 0  # bounded like every version read (a 5000-digit int() raised ValueError)
