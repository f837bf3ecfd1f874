"""The English a Chinese run still prints (issue 33): every command of tools/dump_outputs.py on its fake machines, run
in zh_CN.UTF-8, and each line of their text output that holds three or
more English words in a row outside what stays as it is (quoted error text, `code`, paths, flags, commands to paste,
a script written to a file).

    .venv/bin/python tools/zh_scan.py              # the lines, grouped, most frequent first
    .venv/bin/python tools/zh_scan.py --keep DIR   # also keep the outputs in DIR

A line it lists is a sentence to mark (docs/contributing.md, "Where a sentence lives") or a value that stays English
(an error message quoted without quotes, a name); it reads the outputs, it decides nothing. Not in the wheel.
"""

from __future__ import annotations

import collections
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dump_outputs  # noqa: E402

QUOTED = re.compile(r'`[^`]*`|"[^"\n]*"|“[^”]*”|\'[^\'\n]{3,}\'|「[^」]*」|\[[^]\n]*\]|\{[^}\n]*\}')  # and --help's [--x]
VALUE = re.compile(r"\S*[/=\\@]\S*|--?[\w-]+|\S*\d\S*")  # a path, a flag, a version or a number
WORDS = re.compile(r"(?<![\w.-])[A-Za-z][a-z']+(?:[ ,;:]+[A-Za-z][a-z']+){2,}(?![\w.-])")
COMMAND = re.compile(r"^\s*(\$ |#!|用法：|(export|unset|set|setenv|sudo|pip|conda|cudaenv|uv|eval|source|alias|echo|ln|rm|"
                     r"nvidia-smi|apt-get|dnf|torchrun|ldconfig|kill|printf)\b|python\S* |\w+=)")
MACHINE_READ = (".json", ".prom", ".md", ".html")  # English by design without --lang (HTML: its words are fleet's text's)
WRITTEN = ("init-", "use-", "uninstall-script")  # shell code and the scripts cudaenv writes to files


def english_lines(text: str):
    """The lines of one output (after its ``--- stdout`` mark) with three English words in a row outside values."""
    body = text.split("--- stdout\n", 1)[-1]
    for line in body.splitlines():
        if line.startswith("--- ") or COMMAND.match(line) or "匹配：" in line:
            continue
        words = line.split("    # ", 1)[1] if "    # " in line else line
        if WORDS.search(VALUE.sub(" X ", QUOTED.sub(" Q ", words))):
            yield line.strip()


def scan(folder: Path):
    """{line: [file, ...]} for every output under ``folder``."""
    found = collections.defaultdict(list)
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.suffix in MACHINE_READ or path.name.startswith(WRITTEN):
            continue
        for line in english_lines(path.read_text(encoding="utf-8", errors="replace")):
            found[line].append(str(path.relative_to(folder)))
    return found


def main(argv) -> int:
    keep = Path(argv[argv.index("--keep") + 1]) if "--keep" in argv else None
    base = Path(tempfile.mkdtemp(prefix="cudaenv-zh-scan-"))
    out = keep or base / "out"
    try:
        if out.exists():
            shutil.rmtree(out)
        dump_outputs.dump(out, base / "machines", extra_env={"LANG": "zh_CN.UTF-8"})
        found = scan(out)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    for line, files in sorted(found.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print("%3d  %s    [%s%s]" % (len(files), line[:160], files[0], ", ..." if len(files) > 1 else ""))
    print("%d lines in %d outputs" % (len(found), len({f for files in found.values() for f in files})))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
