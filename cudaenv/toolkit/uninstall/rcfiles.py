"""Shell startup lines that mention a toolkit, and the exact command that takes them out.

Each line is shown as file:line with its exact text and gets one of three actions:

* ``remove``: the line only concerns the toolkit (``export PATH=/usr/local/cuda-11.8/bin:$PATH``);
* ``rewrite``: the line also names other folders (``PATH="/usr/bin:/usr/local/cuda-11.8/bin"`` in
  /etc/environment): only the toolkit's entries are cut out of the colon-separated list;
* ``hand``: removing it could break the file (it opens or closes an ``if``/``for``/``{`` block, continues
  over a backslash, or names the toolkit in a way that cannot be cut out cleanly): it is shown, not edited.

The edit itself is :data:`EDIT_LINES_CODE`, run as ``python3 -c CODE FILE N ACTION OLD NEW ...``: it copies
FILE to ``FILE.cudaenv-backup`` (``.1``, ``.2``... when taken), checks that every line N still reads exactly
OLD, and rewrites the file in place (a symlinked dotfile stays a link). When OLD is still in the file but on
another line (the file changed since the plan was made) it changes nothing and fails; when OLD is nowhere in
the file any more that line is taken as done (running the script twice is harmless).
"""

import re
from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Tuple

from cudaenv.model.snapshot import Note
from cudaenv.core.i18n import M

SYSTEM_FILES = ("/etc/environment",)
PROFILE_D = "/etc/profile.d"

_OPENERS = re.compile(r"(?:^|[\s;&|(])(if|for|while|until|case|function|begin|switch)(?=\s|$)")
_CLOSERS = re.compile(r"(?:^|[\s;&|])(fi|done|esac|end)(?=\s|;|$|\))")
_ABSPATH = re.compile(r"(?<![\w$}])/[^\s:\"'=;|&)]+")


@dataclass(frozen=True)
class RcLine:
    file: str  # inspected-system path
    lineno: int  # 1-based
    text: str  # exact text, without the line ending
    action: str  # remove | rewrite | hand
    new_text: Optional[str] = None  # for rewrite
    reason: Optional[str] = None  # why "hand"
    targets: Tuple[str, ...] = ()  # toolkit paths it mentions


def rc_files(host) -> List[str]:
    """The startup files to look in (inspected-system paths), whether or not they exist: each home's start-up files
    (:func:`cudaenv.shells.startup.startup_files`: ``$ZDOTDIR/.zshrc`` and ``$XDG_CONFIG_HOME/fish/config.fish`` too,
    where those are set, the files `cudaenv init --install` writes to), then the system's."""
    from cudaenv.shells.startup import VARIABLES, startup_files

    files: List[str] = []
    homes = []
    home = host.env.get("HOME")
    if home:
        homes.append(system_path(host, home))
    moved = {name: system_path(host, host.env[name]) for name in VARIABLES if host.env.get(name)}
    sudo_user = host.env.get("SUDO_USER")
    if sudo_user:  # under sudo HOME is root's: the user's own startup files matter too
        from cudaenv.parse.proc import parse_passwd

        for account in parse_passwd(host.read_text("/etc/passwd")):
            if account.name == sudo_user and account.home and account.home not in homes:
                homes.append(account.home)
    for i, h in enumerate(homes):  # the environment's ZDOTDIR and XDG_CONFIG_HOME are HOME's user's, not SUDO_USER's
        files.extend(f for f in startup_files(h, moved if i == 0 and home else None) if f not in files)
    files.extend(SYSTEM_FILES)
    files.extend(p for p in host.glob(PROFILE_D) if p.endswith(".sh"))
    return files


def system_path(host, p: str) -> str:
    """``p`` as the inspected system names it (a path already inside the root is turned back)."""
    if host.rooted and (p == str(host.root) or p.startswith(str(host.root).rstrip("/") + "/")):
        return host.unroot(p)
    return p


def mentions(text: str, path: str) -> bool:
    """True when ``text`` names ``path`` itself or something inside it (``/usr/local/cuda-11.8`` not ``-11.80``)."""
    path = path.rstrip("/")
    for m in re.finditer(re.escape(path), text):
        after = text[m.end() : m.end() + 1]
        if after == "" or not re.match(r"[\w.+-]", after):
            return True
    return False


def _depth_change(text: str) -> int:
    """Blocks opened minus blocks closed on this line (``${VAR}`` braces are not blocks)."""
    if text.lstrip().startswith("#"):
        return 0
    code = text
    while True:  # ${VAR}, ${VAR:+:${VAR}}: parameter expansions, innermost first
        stripped = re.sub(r"\$\{[^{}]*\}", "", code)
        if stripped == code:
            break
        code = stripped
    code = re.sub(r"(^|\s)#.*$", "", code)
    opens = len(_OPENERS.findall(code)) + code.count("{")
    closes = len(_CLOSERS.findall(code)) + code.count("}")
    return opens - closes


def _balanced(text: str) -> bool:
    return _depth_change(text) == 0


def _cut_entries(text: str, path: str) -> Optional[str]:
    """``text`` with every colon-list entry inside ``path`` removed, or None when one cannot be cut cleanly."""
    pattern = re.compile(re.escape(path.rstrip("/")) + r"(?:/[^\s:\"';]*)?(?![\w.+-])")
    out = text
    while True:
        m = pattern.search(out)
        if m is None:
            return out
        start, end = m.start(), m.end()
        if start > 0 and out[start - 1] == ":":
            out = out[: start - 1] + out[end:]
        elif end < len(out) and out[end] == ":":
            out = out[:start] + out[end + 1 :]
        else:
            return None


def classify(text: str, previous: str, targets: Sequence[str]) -> Tuple[str, Optional[str], Optional[str]]:
    """(action, new_text, reason) for a line mentioning ``targets``; ``previous`` is the line before it."""
    stripped = text.strip()
    if stripped.startswith("#"):
        return "remove", None, None
    if text.rstrip().endswith("\\") or previous.rstrip().endswith("\\"):
        return "hand", None, M("it is part of a command continued over several lines")
    if not _balanced(text):
        return "hand", None, M("it opens or closes a block (if/for/while/case/{ ... }); removing it alone would break the file")
    others = [p for p in _ABSPATH.findall(text) if not any(mentions(p, t) for t in targets)]
    if not others:
        return "remove", None, None
    new = text
    for target in targets:
        new = _cut_entries(new, target) if new is not None else None
    if new is None or any(mentions(new, t) for t in targets):
        return "hand", None, M("it also names %s and the toolkit cannot be cut out of it cleanly", others[0])
    return "rewrite", new, None


def find_lines(file: str, text: str, targets: Sequence[str]) -> List[RcLine]:
    """The lines of ``text`` (the content of ``file``) that mention any of ``targets``."""
    found = []
    lines = text.split("\n")
    depth = 0
    for index, raw in enumerate(lines):
        line = raw[:-1] if raw.endswith("\r") else raw
        inside = depth > 0
        depth = max(0, depth + _depth_change(line))
        hit = tuple(t for t in targets if mentions(line, t))
        if not hit:
            continue
        previous = lines[index - 1] if index else ""
        action, new, reason = classify(line, previous, hit)
        if inside and action != "hand" and not line.lstrip().startswith("#"):
            action, new, reason = "hand", None, M("it is inside an if/for/while/case/{ ... } block; removing it alone could leave the block empty")
        if "\ufffd" in line and action != "hand":  # bytes that are not UTF-8: the exact text cannot be shown or matched
            action, new, reason = "hand", None, M("it holds bytes that are not UTF-8, so it cannot be matched exactly")
        found.append(RcLine(file, index + 1, line, action, new, reason, hit))
    return found


def probe_rc_lines(host, targets: Sequence[str], notes: List[Note]) -> Tuple[RcLine, ...]:
    found: List[RcLine] = []
    for file in rc_files(host):
        if not host.lexists(file):
            continue
        if host.is_link(file) and host.resolve(file) is None:
            continue
        text = host.read_text(file)
        if text is None:
            notes.append(Note("uninstall", M("cannot read %s: shell startup lines there were not checked", file)))
            continue
        found.extend(find_lines(file, text, targets))
    return tuple(found)


def __getattr__(name: str):
    """``EDIT_LINES_CODE``: the line editor's source, ``cudaenv/_child/line_editor.py`` (read when first asked for)."""
    if name == "EDIT_LINES_CODE":
        from cudaenv._child import source

        value = source("line_editor.py").strip()
        globals()[name] = value
        return value
    raise AttributeError(name)  # (a module attribute made on first use: any other name is not there)


def edit_args(lines: Iterable[RcLine]) -> List[str]:
    """The ``N ACTION OLD NEW`` arguments for :data:`EDIT_LINES_CODE` (lines of one file)."""
    args: List[str] = []
    for line in sorted(lines, key=lambda l: l.lineno):
        args += [str(line.lineno), line.action, line.text, line.new_text or ""]
    return args
