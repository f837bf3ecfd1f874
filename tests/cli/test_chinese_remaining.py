"""The texts a Chinese run still printed in English after the third pass of issue 33 (the closing note's list and what
a sweep of every command's scenarios in zh_CN found), each said in Chinese now; the English of each is unchanged.
"""

from builders import TOOLS

from cudaenv.core.i18n import tr
from cudaenv.render.width import width_of

ZH = {"LANG": "zh_CN.UTF-8"}


def _flat(text):
    return "".join(text.split())


# ------------------------------------------------------------------ the install plan's source note
def test_the_install_plans_source_note_in_chinese(chinese):
    from cudaenv.toolkit.install.repos import plan_commands

    _, source = plan_commands("12.4", "ubuntu", "22.04", None, "x86_64")
    assert source == ("https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html (network repository "
                      "installation: cuda-keyring_1.1-1_all.deb on Debian/Ubuntu, dnf config-manager --add-repo "
                      ".../cuda-rhel9.repo on RHEL/Rocky, zypper addrepo .../cuda-sles15.repo on SUSE; the "
                      "cuda-toolkit-X-Y meta package installs the toolkit without the driver)")  # the table's, as it was
    assert tr(source) == ("https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html（网络仓库安装："
                          "Debian/Ubuntu 上用 cuda-keyring_1.1-1_all.deb，RHEL/Rocky 上用 dnf config-manager --add-repo "
                          ".../cuda-rhel9.repo，SUSE 上用 zypper addrepo .../cuda-sles15.repo；元包 cuda-toolkit-X-Y "
                          "只装工具包，不装驱动）")
    _, wsl = plan_commands("12.4", "ubuntu", "22.04", 2, "x86_64")
    assert tr(wsl).startswith("https://docs.nvidia.com/cuda/wsl-user-guide/index.html（WSL2：使用 WSL-Ubuntu 仓库")


def test_a_source_without_a_note_is_said_as_it_is(chinese):
    from cudaenv.toolkit.install.repos import source_text

    for text in ("https://example.invalid/guide", "https://example.invalid/guide ()", "a (b) c"):
        assert source_text(text) == text and tr(source_text(text)) == text


def test_install_plan_on_a_wsl2_root_in_chinese(cli, fake_root, recorded):
    fake_root.file("etc/os-release", recorded("osrelease-ubuntu-2204.txt"))
    fake_root.file("proc/version", recorded("proc-version-wsl2.txt"))
    fake_root.file("proc/sys/kernel/osrelease", "5.15.153.1-microsoft-standard-WSL2\n")
    env = {"PATH": TOOLS, "CUDAENV_ROOT": str(fake_root.path), "COLUMNS": "80"}
    zh = cli("install", "12.4", "--plan", env=dict(env, **ZH))
    en = cli("install", "12.4", "--plan", env=dict(env, LANG="C"))
    assert zh.code == en.code == 0, zh.err
    assert _flat("来源：https://docs.nvidia.com/cuda/wsl-user-guide/index.html（WSL2：使用 WSL-Ubuntu 仓库（其中的软件包"
                 "不含驱动），安装 cuda-toolkit-12-x；不要装 cuda、cuda-12-x 或 cuda-drivers，它们会覆盖 WSL 的驱动桩库）") \
        in _flat(zh.out), zh.out
    assert "whose packages hold no driver" not in zh.out and "whose packages hold no driver" in " ".join(en.out.split())
    assert all(width_of(line) <= 80 for line in zh.out.splitlines() if " " in line.strip()), zh.out  # (a URL alone: unbroken)
