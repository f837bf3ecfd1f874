"""Issue 11, "one home for every fact": each parser or list the audit found in two to four copies is written once,
and a second copy anywhere in the package fails here.

Each check reads every module of the installed package (``ast``: code, not prose) for the signature of one fact:
a string a parser of that output needs (``"Cuda compilation tools"``, a ``Driver Version`` regex, a
``/var/lib/dpkg`` path), or the arithmetic or idiom that decodes it (``n // 1000`` of a CUDA int, a version-key
prefix match of a toolkit spec). Docstrings, comments and prose messages are not code and are not read as a copy:
a check looks at string constants in code only, and only at forms a parser would use. ``tests/`` and ``data/`` are
outside the package, so their samples and rows are never flagged.

Each check is also run on a planted second copy (the ``PLANTED`` cases): a check that cannot see one proves nothing.
Where a copy still lives in a module another change owns, it is in that check's ``ALLOWED`` with its reason, and
an entry that is no longer needed fails (as in test_layers.py).
"""

import ast
import os
import re

import pytest

import cudaenv
from builders import code_constants, package_modules

PACKAGE = os.path.dirname(cudaenv.__file__)


MODULES = {module: open(path, encoding="utf-8").read() for module, path in package_modules().items()}
TREES = {m: ast.parse(text) for m, text in MODULES.items()}


_STRINGS = {}


def code_strings(tree):
    """Every str (and bytes, as latin-1) constant of the code, docstrings left out."""
    if id(tree) not in _STRINGS:
        _STRINGS[id(tree)] = (tree, [n.value if isinstance(n.value, str) else n.value.decode("latin-1") for n in code_constants(tree)])
    return _STRINGS[id(tree)][1]


_REGEX = re.compile(r"\\[sdSwbD]|\(\?|\[\^|\.\*|\.\+|\\\.")  # regex syntax in a string constant


def _strings_match(pattern):
    compiled = re.compile(pattern)
    return lambda tree: any(compiled.search(s) for s in code_strings(tree))


# ----------------------------------------------------------------------------- the signatures
def nvcc_parser(tree):
    """``nvcc --version``'s line read by hand: its words, or a regex for ``release 12.4, V12.4.131``."""
    for s in code_strings(tree):
        if "compilation tools" in s.lower() or (re.search(r"release|,(?:\s|\\s[*+]?)?V[(\\]", s) and _REGEX.search(s)):
            return True
    return False


_CUDA_INT_DIVISORS = {100, 1000, 10000}


def cuda_int_arithmetic(tree):
    """``n // 1000``, ``n % 1000 // 10``, ``divmod(n, 1000)``, ``major * 1000``: decoding or encoding a CUDA or cuDNN
    integer version (12040, 90100, 8907)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp):
            right = node.right
            constant = isinstance(right, ast.Constant) and type(right.value) is int
            if constant and isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right.value in _CUDA_INT_DIVISORS:
                if not (isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)):  # "%d" % 1000 is formatting
                    return True
            if constant and isinstance(node.op, ast.Mult) and right.value in (1000, 10000):
                return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "divmod" and len(node.args) == 2:
            if isinstance(node.args[1], ast.Constant) and node.args[1].value in _CUDA_INT_DIVISORS:
                return True
    return False


package_db_paths = _strings_match(r"/var/lib/(dpkg|rpm|alternatives)|/usr/lib/sysimage/rpm")


def ld_so_conf(tree):
    """A path of the loader's configuration: ``/etc/ld.so.conf(.d)``, or the bare name joined onto ``/etc``."""
    return any("/etc/ld.so.conf" in s or s.strip().split("/")[0] in ("ld.so.conf", "ld.so.conf.d") for s in code_strings(tree))


_RC_NAMES = {".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zprofile", ".zshenv", ".zlogin",
             "config.fish", "/etc/environment", "/etc/profile", "/etc/bash.bashrc"}


def _rc_name(node):
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return False
    value = node.value.strip()
    return value in _RC_NAMES or value.rsplit("/", 1)[-1] in _RC_NAMES


def _rc_names(node):
    """The start-up file names in a tuple/list/set, and in the rows of a table of them (a tuple of tuples)."""
    count = 0
    for e in node.elts:
        if isinstance(e, (ast.Tuple, ast.List)):
            count += sum(1 for x in e.elts if _rc_name(x))
        elif _rc_name(e):
            count += 1
    return count


def rc_file_list(tree):
    """A list of shell start-up files (two or more names in one tuple/list/set, or in the rows of one table), the
    ``/etc/profile.d`` folder, or a start-up file placed by ``ZDOTDIR`` / ``XDG_CONFIG_HOME`` (shells/posix.py and
    shells/fish.py each had the rule for the file they write, which uninstall's list did not follow)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and _rc_names(node) >= 2:
            return True
    strings = code_strings(tree)
    return any("/etc/profile.d" in s for s in strings) or bool({"ZDOTDIR", "XDG_CONFIG_HOME"} & set(strings))


def _is_version_key_call(node):
    return isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "version_key"


def toolkit_spec_grammar(tree):
    """The spec grammar's two idioms: a version-key prefix match (``version_key(v)[: len(key)] == key``) and the
    path-or-version test (``spec.startswith(("/", ".", "~"))``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_version_key_call(node.value) and isinstance(node.slice, ast.Slice):
            upper = node.slice.upper
            if upper is not None and not isinstance(upper, ast.Constant):
                return True
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "startswith" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Tuple) and {"/", "~"} <= {getattr(e, "value", None) for e in arg.elts}:
                return True
    return False


_SMI_KEYS = re.compile(r"(Driver|CUDA|KMD|UMD)(\\s[*+]?|\s|\[\s\]\+?)Version")


def nvidia_smi_parser(tree):
    """A regex for nvidia-smi's ``Driver Version:`` / ``CUDA Version:`` (or the bare key a split compares with)."""
    for s in code_strings(tree):
        if _SMI_KEYS.search(s) and (_REGEX.search(s) or len(s.strip().rstrip(":").strip()) <= len("CUDA UMD Version")):
            return True
    return False


_MANAGERS = r"(?:apt-get|apt|dnf|yum|zypper|pacman|apk|ubuntu-drivers|emerge)"
_ACTIONS = r"(?:install|reinstall|remove|purge|autoremove|update|upgrade|in|rm|add|del|-S\w*|-R\w*|--purge)"
_MANAGER_COMMAND = re.compile(r"(?:^|[\s;&|`(])%s\s+(?:-\S+\s+)*%s\b" % (_MANAGERS, _ACTIONS))


def package_manager_command(tree):
    """A distro package-manager command: in a string (``"sudo apt-get install ..."``, ``"dnf remove"``) or as an
    argv tuple (``("apt-get", "--purge", "remove", ...)``)."""
    if any(_MANAGER_COMMAND.search(s) for s in code_strings(tree)):
        return True
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List)) and len(node.elts) >= 2:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and re.fullmatch(_MANAGERS, first.value):
                if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts[:2]):
                    rest = " ".join(e.value for e in node.elts[1:] if isinstance(e, ast.Constant) and isinstance(e.value, str))
                    if re.match(r"(?:-\S+\s+)*%s\b" % _ACTIONS, rest):
                        return True
    return False


def wheel_or_index_parser(tree):
    """A wheel file name or a package-index page read by hand: packaging's wheel-name parser, the HTML parser, a
    regex over ``.whl`` names or ``cpXY``/``manylinux`` tags, a ``def parse_wheel...``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("packaging.utils", "packaging.tags", "html.parser"):
            if node.module != "packaging.utils" or any(a.name == "parse_wheel_filename" for a in node.names):
                return True
        if isinstance(node, ast.Import) and any(a.name in ("html.parser", "packaging.tags") for a in node.names):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and re.search(r"wheel_(file)?name|index_page", node.name):
            return True
    for s in code_strings(tree):
        if _REGEX.search(s) and re.search(r"whl|cp3|manylinux|href", s):
            return True
    return False


def elf_reader(tree):
    """An ELF file read by hand or through a library: the magic compared, pyelftools imported, or a dynamic-table
    or program-header format unpacked (``"qQ"`` entries, ``"IIQQQQ"`` program headers): issue 29 had two readers of
    NEEDED, pyelftools' and a struct one, and now has one."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "elftools":
            return True
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "elftools" for a in node.names):
            return True
    return any(s in ("\x7fELF", "qQ", "iI", "IIQQQQ") or s.lstrip("<>") in ("qQ", "iI") for s in code_strings(tree))


# check -> (the signature, the one home (modules), modules still holding a copy -> why)
CHECKS = {
    "nvcc": (nvcc_parser, {"cudaenv.parse.nvcc"}, {
        "cudaenv.explain.literals": "generated (tools/explain_literals.py): data/error_patterns.json's patterns as the "
                                    "keys of their literals (issue 35), nvcc's messages among them; no parser",
    }),
    "cuda-int": (cuda_int_arithmetic, {"cudaenv.core.version"}, {}),
    "package-db": (package_db_paths, {"cudaenv.probes.package_db"}, {}),
    "ld.so.conf": (ld_so_conf, {"cudaenv.probes.ldconf"}, {}),
    "rc-files": (rc_file_list, {"cudaenv.shells.startup", "cudaenv.toolkit.uninstall.rcfiles"}, {}),
    "toolkit-spec": (toolkit_spec_grammar, {"cudaenv.toolkit.select"}, {
        "cudaenv.probes.toolkits.named": "folder names read as version keys, compared part by part with the spec's and "
                                         "a toolkit's own (issue 35: probes sit below toolkit.select, and the result is "
                                         "then selected by toolkit.select itself)",
    }),
    "nvidia-smi": (nvidia_smi_parser, {"cudaenv.parse.nvidia_smi"}, {
        "cudaenv.parse.device_query": "deviceQuery's own `CUDA Driver Version / Runtime Version` line (another tool)",
        "cudaenv.parse.toolkit_files": "a toolkit's version.txt, `CUDA Version 10.2.89` (another file)",
    }),
    "package-manager": (package_manager_command, set(), {
        "cudaenv.toolkit.uninstall.tool_steps": "uninstall removes the exact packages owning a toolkit by package format "
                                                "(deb: apt-get --purge remove, rpm: dnf remove), not by distro",
        "cudaenv.toolkit.uninstall.driver_steps": "uninstall --driver: the same apt-get / dnf removal of the driver's "
                                                  "own packages, by package format",
    }),
    "wheel-index": (wheel_or_index_parser, {"cudaenv.parse.index_pages"}, {}),
    "elf": (elf_reader, {"cudaenv.parse.elf"}, {}),
}


def flagged(check, trees):
    signature = CHECKS[check][0]
    return {m for m, tree in trees.items() if signature(tree)}


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_each_fact_has_one_home(check):
    _signature, homes, allowed = CHECKS[check]
    found = flagged(check, TREES)
    assert homes <= found, "the home no longer holds it: %s (the check reads nothing: fix the signature)" % sorted(homes - found)
    unexplained = sorted(found - homes - set(allowed))
    stale = sorted(set(allowed) - found)
    assert unexplained == [], "a second copy of %s: %s (%s instead)" % (
        check, unexplained, "call %s" % ", ".join(sorted(homes)) if homes else "a row in data/")
    assert stale == [], "no longer holds a copy, so remove from ALLOWED: %s" % stale


# check -> second copies as they were found in the package, or as a contributor would write them again
PLANTED = {
    "nvcc": [
        'import re\nVERSION = re.compile(r"release (\\d+\\.\\d+), V([\\d.]+)")\n',
        'def nvcc(text):\n    for line in text.splitlines():\n        if "Cuda compilation tools" in line:\n            return line\n',
    ],
    "cuda-int": [
        'def cuda(n):\n    return "%d.%d" % (n // 1000, (n % 1000) // 10)\n',
        'def cudnn(n):\n    major, rest = divmod(n, 1000)\n    return major, rest\n',
        'def encode(major, minor):\n    return major * 1000 + minor * 10\n',
    ],
    "package-db": [
        'LISTS = "/var/lib/dpkg/info"\n',
        'def rpm(host):\n    return host.is_dir("/var/lib/rpm")\n',
    ],
    "ld.so.conf": [
        'CONF = "/etc/ld.so.conf.d"\n',
        'def conf(host):\n    return host.join("/etc", "ld.so.conf")\n',
    ],
    "rc-files": [
        'FILES = ("~/.bashrc", "~/.zshrc")\n',
        'def files(home):\n    return [home + "/.bashrc", home + "/.bash_profile"] + ["/etc/profile.d"]\n',
        'FILES = [".profile", ".config/fish/config.fish"]\n',
        'def rc_file(env):\n    return posixpath.join(env.get("ZDOTDIR") or env.get("HOME") or "~", ".zshrc")\n',
        'def rc_file(env):\n    return env.get("XDG_CONFIG_HOME", "~/.config") + "/fish/config.fish"\n',
        'TABLE = (("bash", ".bashrc"), ("zsh", ".zshrc"))\n',
    ],
    "toolkit-spec": [
        'from cudaenv.core.version import version_key\n'
        'def match(spec, v):\n    key = version_key(spec)\n    return version_key(v)[: len(key)] == key\n',
        'def is_path(spec):\n    return spec.startswith(("/", ".", "~"))\n',
    ],
    "nvidia-smi": [
        'import re\nBANNER = re.compile(r"Driver Version:\\s*([\\d.]+)")\n',
        'def banner(line):\n    key, _, value = line.partition(":")\n    return value if key.strip() == "CUDA Version" else None\n',
    ],
    "package-manager": [
        'FIX = ["sudo apt-get install nvidia-driver-550", "sudo dnf install akmod-nvidia"]\n',
        'STEP = "sudo zypper in nvidia-video-G06"\n',
        'ARGV = ("pacman", "-S", "nvidia")\n',
        'ARGV = ("yum", "install", "cuda")\n',
    ],
    "wheel-index": [
        'import re\nWHEEL = re.compile(r"^(torch)-([^-]+)-cp(\\d+)-cp\\d+-manylinux.*\\.whl$")\n',
        'from packaging.utils import parse_wheel_filename\n',
        'from html.parser import HTMLParser\n',
        'def parse_wheel_name(name):\n    return name.split("-")\n',
    ],
    "elf": [
        'from elftools.elf.elffile import ELFFile\n',
        'def needed(data):\n    return data[:4] == b"\\x7fELF"\n',
        'import struct\ndef entries(raw):\n    return list(struct.iter_unpack("<qQ", raw))\n',
    ],
}

# what each check must not take for a copy: prose, docstrings, the one home's users
LEGITIMATE = {
    "nvcc": ['"""Reads ``Cuda compilation tools, release 13.0, V13.0.88`` through cudaenv.parse.nvcc."""\n',
             'from cudaenv.parse.nvcc import find_nvcc_version\nNOTE = "nvcc --version printed no release"\n'],
    "cuda-int": ['MB = 1024 * 1024\nSIZE = 100 * MB\nLINE = "%d" % 1000\nDIGIT = 7 % 10\n',
                 'from cudaenv.core.version import cuda_from_int\nV = cuda_from_int(12040)\n'],
    "package-db": ['"""Reads /var/lib/dpkg/info/*.list through cudaenv.probes.dpkg."""\n',
                   'from cudaenv.probes.package_db import DPKG_INFO\n'],
    "ld.so.conf": ['"""The ld.so.conf scanner is cudaenv.probes.ldconf."""\n', 'NOTE = "# lines of ld.so.conf.d: kept"\n'],
    "rc-files": ['HELP = "the rc file for --install (default: ~/.bashrc, ~/.zshrc)"\n',
                 'def rc(home):\n    return home + "/.bashrc"\n',
                 'from cudaenv.shells.startup import startup_file\nZSH = startup_file("zsh", {"HOME": "/h"})\n'],
    "toolkit-spec": ['from cudaenv.core.version import version_key\nMM = version_key("12.4.1")[:2]\n',
                     'def top(name):\n    return name.startswith("/")\n'],
    "nvidia-smi": ['MESSAGE = "nvidia-smi prints CUDA Version: %s"\n',
                   '"""What nvidia-smi\'s "CUDA Version" says."""\n'],
    "package-manager": ['TOOLS = ("ldconfig", "nvcc", "apt-get", "dnf")\n',
                        '"""Removes with ``apt-get --purge remove``."""\n', 'NOTE = "sudo ldconfig"\n'],
    "wheel-index": ['from cudaenv.parse.index_pages import parse_wheel_filename\nW = parse_wheel_filename("x.whl")\n',
                    'from packaging.utils import canonicalize_name\nOK = "x".endswith(".whl")\n'],
    "elf": ['from cudaenv.parse.elf import parse_elf_dynamic\nNEEDED = parse_elf_dynamic(b"").needed\n',
            '"""Reads the DT_NEEDED entries through cudaenv.parse.elf (the \\x7fELF magic)."""\n'],
}


@pytest.mark.parametrize("check,source", [(c, s) for c in sorted(PLANTED) for s in PLANTED[c]])
def test_a_planted_second_copy_is_found(check, source):
    assert flagged(check, {"cudaenv.planted": ast.parse(source)}) == {"cudaenv.planted"}


@pytest.mark.parametrize("check,source", [(c, s) for c in sorted(LEGITIMATE) for s in LEGITIMATE[c]])
def test_a_use_of_the_home_or_prose_is_no_copy(check, source):
    assert flagged(check, {"cudaenv.legitimate": ast.parse(source)}) == set()


def test_every_check_is_planted_and_has_legitimate_uses():
    assert set(PLANTED) == set(CHECKS) == set(LEGITIMATE)
