"""The stack's I/O: probe the machine for ``cudaenv lock``, write the stack file atomically, read one (bounded, a
regular file only) and check a doctor's snapshot against it for ``doctor --against``."""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Tuple

from cudaenv.core.i18n import M
from cudaenv.stack.lock import StackFileError, check_stack, parse_stack, plan_stack, stack_toml
from cudaenv.model.reports import StackCheck
from cudaenv.stack.records import Stack

DEFAULT_FILE = "cuda-stack.toml"
MAX_STACK = 64 * 1024  # a stack file is a few hundred bytes


def lock_stack(env: Mapping[str, str], host: Any, python: Optional[str], index_base_flag: Optional[str] = None,
               now: Optional[str] = None) -> Tuple[Stack, str]:
    """(the :class:`Stack` of this machine, its TOML): probed without importing torch (the static pass)."""
    import time

    import cudaenv
    from cudaenv.diagnose.view import build_view
    from cudaenv.probes.collect import collect_snapshot
    from cudaenv.recommend.service import index_base

    base = index_base(env, index_base_flag)
    snapshot = collect_snapshot(host, python=python, quick=True)
    stamp = now or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    stack = plan_stack(snapshot, build_view(snapshot), base, generated_by="cudaenv %s" % cudaenv.__version__,
                       generated_at=stamp, host=host.hostname())
    return stack, stack_toml(stack)


def write_stack(path: str, text: str) -> None:
    """The stack file written atomically (a reader sees the old one or the new one)."""
    from cudaenv.core.fs import atomic_write_text, usual_mode

    atomic_write_text(path, text, mode=usual_mode())


def read_stack(path: str) -> Stack:
    """The stack file ``path`` read (bounded; a regular file only); :class:`StackFileError` says why it is not one."""
    from cudaenv.host.files import read_regular_why

    data, why = read_regular_why(path, MAX_STACK + 1)
    if data is None:
        raise StackFileError(why or M("no such file"))
    if len(data) > MAX_STACK:
        raise StackFileError(M("larger than %d KiB: not a stack file", MAX_STACK // 1024))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StackFileError(M("not UTF-8 text: byte %d", exc.start)) from None
    return parse_stack(text)


def check_against(path: str, snapshot: Any, view: Any, cwd: str = ".") -> StackCheck:
    """``doctor --against PATH``: the stack file read and this snapshot checked against it."""
    stack = read_stack(os.path.join(cwd, path))
    return StackCheck(file=path, locked_on=stack.host, differences=check_stack(stack, snapshot, view))
