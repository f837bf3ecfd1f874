"""Programs on PATH that lead into a toolkit: links (``/usr/local/bin/nvcc -> /usr/local/cuda-12.4/bin/nvcc``)
and small wrapper scripts (``exec /usr/local/cuda-13.0/bin/nvcc "$@"``, seen on a real machine).

Once the toolkit is gone they dangle or fail with "No such file"; they are residue. A link is removed
as a link; a wrapper script only when all it does is exec into the toolkit, else it is shown for editing by hand.
"""

import posixpath
import re
from dataclasses import dataclass
from typing import List, Sequence, Tuple

from cudaenv.model.snapshot import Note
from cudaenv.toolkit.uninstall.rcfiles import mentions

BIN_DIRS = ("/usr/local/bin", "/usr/bin", "/opt/bin")
SCRIPT_LIMIT = 4096


@dataclass(frozen=True)
class Wrapper:
    path: str  # /usr/local/bin/nvcc
    kind: str  # link | script
    text: str  # the link's target, or the exec line
    action: str  # remove | hand
    target: str  # the toolkit path it leads into


def classify_script(text: str, target: str) -> str:
    """``remove`` when the script only execs a program inside ``target``; else ``hand``."""
    body = [l.strip() for l in text.splitlines()[1:] if l.strip() and not l.strip().startswith("#")]
    exec_line = re.compile(r"""^exec\s+["']?%s/[^\s"']+["']?(\s+"\$@"|\s+\$@|\s+"\$\{@\}")?\s*$""" % re.escape(target.rstrip("/")))
    return "remove" if len(body) == 1 and exec_line.match(body[0]) else "hand"


def probe_wrappers(host, targets: Sequence[str], notes: List[Note]) -> Tuple[Wrapper, ...]:
    found = []
    for folder in BIN_DIRS:
        for name in host.listdir(folder):
            path = posixpath.join(folder, name)
            link = host.readlink(path)
            if link is not None:
                absolute = link if link.startswith("/") else posixpath.normpath(posixpath.join(folder, link))
                for t in targets:
                    if mentions(absolute, t):
                        found.append(Wrapper(path, "link", link, "remove", t))
                        break
                continue
            try:
                real = host.path(path)
                if not real.is_file() or real.stat().st_size > SCRIPT_LIMIT:
                    continue
            except OSError:
                continue
            data = host.read_bytes(path, limit=SCRIPT_LIMIT)
            if not data or not data.startswith(b"#!"):
                continue
            text = data.decode("utf-8", "replace")
            for t in targets:
                if mentions(text, t):
                    line = next((l.strip() for l in text.splitlines() if mentions(l, t)), "")
                    found.append(Wrapper(path, "script", line, classify_script(text, t), t))
                    break
    return tuple(found)
