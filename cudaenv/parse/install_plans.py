"""What an installer's dry run says it would do, read: ``uv pip install --dry-run`` (its plan, printed to stderr) and
``conda install --dry-run --json`` (the transaction's LINK and UNLINK records). pip's own report is
:func:`cudaenv.parse.pip_output.parse_install_report`.

Pure: text in, values out; never raises for any input, and reads at most MAX_PLAN characters.

uv 0.13.9 sample (tests/recorded/uv-pip-install-dry-run-0.13.9.txt)::

    Would uninstall 1 package
    Would install 2 packages
     + six==1.17.0
     - torch==2.8.0+cu128
     + torch==2.9.1

conda sample (tests/recorded/conda-update-dry-run-json-4.4.txt; later conda prints the group object itself, not a
list of groups)::

    {"actions": [{"LINK": [{"name": "pytest", "version": "3.3.1", "build_string": "py36_0", ...}],
                  "UNLINK": [{"name": "pytest", "version": "3.3.0", ...}], "PREFIX": "..."}], ...}
"""

from typing import Optional, Tuple

MAX_PLAN = 4 * 1024 * 1024
MAX_ENTRIES = 5000


def parse_uv_plan(text: object) -> Tuple[Tuple[str, str, str], ...]:
    """(sign, name, version) of each `` + name==version`` / `` - name==version`` line of uv's dry run: ``+`` would be
    installed, ``-`` uninstalled; names as uv prints them (normalized)."""
    if not isinstance(text, str):
        return ()
    out = []
    for line in text[:MAX_PLAN].splitlines():
        if len(line) < 6 or line[0] != " " or line[1] not in "+-" or line[2] != " ":
            continue
        name, sep, version = line[3:].strip().partition("==")
        if sep and name and version and " " not in name and " " not in version and len(name) <= 200 and len(version) <= 100:
            out.append((line[1], name, version))
            if len(out) >= MAX_ENTRIES:
                break
    return tuple(out)


def _record(entry) -> Optional[Tuple[str, str, str]]:
    """(name, version, build) of one LINK/UNLINK entry: an object (name, version, build_string or build), or conda
    4.4's string form ``channel::name-version-build``."""
    if isinstance(entry, dict):
        name, version = entry.get("name"), entry.get("version")
        build = entry.get("build_string", entry.get("build"))
        build = build if isinstance(build, str) else ""
    elif isinstance(entry, str):
        parts = entry.rsplit("::", 1)[-1].rsplit("-", 2)
        if len(parts) != 3:
            return None
        name, version, build = parts
    else:
        return None
    if not (isinstance(name, str) and isinstance(version, str) and 0 < len(name) <= 200 and 0 < len(version) <= 100):
        return None
    return name, version, build[:200]


def parse_conda_plan(text: object) -> Optional[Tuple[Tuple[Tuple[str, str, str], ...], Tuple[Tuple[str, str, str], ...]]]:
    """((name, version, build) to link, ... to unlink) of ``conda install --dry-run --json`` (or mamba's), read from the
    first document that starts a line; None when there is no such document (an error document, anything else)."""
    import json

    from cudaenv.parse.index_pages import json_depth_within

    if not isinstance(text, str) or len(text) > MAX_PLAN or not json_depth_within(text):
        return None
    # the first document that starts a line: a line before it (the DryRunExit a terminal shows) and a second document
    # after it (mamba's doubled output, mamba-org/mamba#207) are not the plan
    offset = 0
    for line in text.splitlines(keepends=True):
        body = line.lstrip(" \t")
        if body[:1] == "{":
            break
        offset += len(line)
    else:
        return None
    try:
        data = json.JSONDecoder().raw_decode(text, offset + len(line) - len(body))[0]
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or "actions" not in data:
        return None
    groups = data["actions"]
    groups = [groups] if isinstance(groups, dict) else groups if isinstance(groups, list) else []
    link, unlink = [], []
    for group in groups[:100]:
        if not isinstance(group, dict):
            continue
        for key, into in (("LINK", link), ("UNLINK", unlink)):
            entries = group.get(key)
            for entry in entries[:MAX_ENTRIES] if isinstance(entries, list) else ():
                found = _record(entry)
                if found is not None:
                    into.append(found)
    return tuple(link), tuple(unlink)
