"""Versions a person printed or retold beside an error, outside any tool's own layout -> values. Pure, bounded,
never raises.

Samples (each from a public thread; tests/parse/test_parse_printed.py)::

    >>> print(torch.__version__)                     the next line: 2.1.0+cu118
    >>> torch.__version__                            the next line: '1.13.1+cu117'
    >>> torch.version.cuda                           the next line: '11.7'
    python: 3.10.10  •  torch: 1.12.1  •  xformers   (a web UI's footer)
    PyTorch Version (e.g., 1.0): 1.7.1               (an issue template's copy of collect_env's fields)
    Torch version: 2.0.0+cu117
    torch==2.1.0+cu118                               (pip freeze)
    torch                     2.1.0+cu118            (pip list)

and the kernel log's NVIDIA lines (``dmesg``, ``journalctl -k``)::

    NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.148.06  Mon May  5 11:36:21 UTC 2025
    NVRM: API mismatch: the client has the version 535.54.03, but
    NVRM: this kernel module has the version 530.30.02.  Please
"""

import re
from typing import NamedTuple, Optional

from cudaenv.parse._lines import Text, as_text, lines
MAX_TEXT = 1_000_000  # characters searched (a paste is searched in its head and tail by explain already)

_TORCH = r"(\d{1,2}\.\d{1,3}(?:\.\d{1,3})?(?:(?:a|b|rc|\.dev|\.post)\d{1,10})?(?:\+[0-9A-Za-z.]{1,40})?)"
_CUDA = r"(\d{1,2}\.\d{1,2})"
_PRINT_TORCH = re.compile(r"torch\.__version__\)?\s{0,4}(?:#\s{0,4})?$")
_PRINT_CUDA = re.compile(r"torch\.version\.cuda\)?\s{0,4}(?:#\s{0,4})?$")
_VALUE_TORCH = re.compile(r"^(?:Out\[\d{1,6}\]:\s{0,4})?['\"]?" + _TORCH + r"['\"]?$")
_VALUE_CUDA = re.compile(r"^(?:Out\[\d{1,6}\]:\s{0,4})?['\"]?" + _CUDA + r"['\"]?$")
_SAME_LINE = re.compile(r"torch\.__version__\)?\s{0,4}(?:#|->|=>|:|=)\s{0,4}['\"]?" + _TORCH + r"['\"]?(?![\w.+])")
_FIELD = re.compile(
    r"(?:^|(?<!build)[\s•|,(])(?:PyTorch|Torch)(?: version| Version)?(?: \(e\.g\., [^)\n]{1,20}\))?\s{0,4}(?::|==|=)\s{0,4}v?"
    + _TORCH + r"(?![\w.+])", re.IGNORECASE)
_PIP_LIST = re.compile(r"^torch\s{2,40}" + _TORCH + r"$")
_LOADING = re.compile(r"NVRM: loading NVIDIA UNIX (?:Open )?[\w ]{0,40}?Kernel Module(?: for [\w]{1,20})?\s{1,8}(\d{2,4}(?:\.\d{1,4}){1,2})")
_MISMATCH = re.compile(
    r"API mismatch: the client (?:'[^'\n]{1,60}' \(pid \d{1,9}\) )?(?:NVRM: )?has the version (\d{2,4}(?:\.\d{1,4}){1,2}),? "
    r"but (?:NVRM: )?this kernel module has (?:NVRM: )?the version (\d{2,4}(?:\.\d{1,4}){1,2})")
_KERNEL_PREFIX = re.compile(r"^(?:\[\s{0,12}\d{1,10}\.\d{1,9}\]\s{0,4}|\w{3} [ \d]\d \d\d:\d\d:\d\d [\w.-]{1,64} kernel:\s{0,4})")


class PrintedTorch(NamedTuple):
    version: Optional[str]  # "2.1.0+cu118"
    cuda: Optional[str]  # torch.version.cuda: "11.8"


class KernelLog(NamedTuple):
    module_version: Optional[str]  # the kernel module loaded: "530.30.02"
    client_version: Optional[str]  # the userspace driver that met it, from an API mismatch: "535.54.03"


def _next_value(rows, i: int, pattern: "re.Pattern[str]") -> Optional[str]:
    for row in rows[i + 1: i + 4]:
        row = row.strip()
        if not row:
            continue
        m = pattern.match(row)
        return m.group(1) if m else None
    return None


def parse_printed_torch(text: Text) -> Optional[PrintedTorch]:
    """The torch version (and CUDA) a person printed or copied (the samples above); None when none is shown."""
    body = as_text(text)[:MAX_TEXT]
    if "orch" not in body:
        return None
    rows = lines(body)
    version = cuda = None
    for i, raw in enumerate(rows):
        row = raw.strip()
        if "orch" not in row:
            continue
        if version is None:
            if _PRINT_TORCH.search(row):
                version = _next_value(rows, i, _VALUE_TORCH)
            else:
                m = _SAME_LINE.search(row) or _FIELD.search(row) or _PIP_LIST.match(row)
                if m is None and row.startswith("torch=="):
                    m = re.match(r"torch==" + _TORCH + r"$", row)
                version = m.group(1) if m else None
        if cuda is None and _PRINT_CUDA.search(row):
            cuda = _next_value(rows, i, _VALUE_CUDA)
        if version is not None and cuda is not None:
            break
    return PrintedTorch(version, cuda) if version or cuda else None


def parse_kernel_log(text: Text) -> Optional[KernelLog]:
    """The NVIDIA kernel module's version (its ``loading`` line or the other side of an ``API mismatch``) and the
    userspace driver an API mismatch names, from pasted ``dmesg``/``journalctl`` lines; None without either."""
    body = as_text(text)[:MAX_TEXT]
    if "NVRM" not in body:
        return None
    rows = [_KERNEL_PREFIX.sub("", row.strip()) for row in lines(body) if "NVRM" in row or "version" in row]
    module = client = None
    for row in rows:
        m = _LOADING.search(row)
        if m and module is None:
            module = m.group(1)
    m = _MISMATCH.search(" ".join(rows).replace("#012", " "))
    if m:
        client, module = m.group(1), m.group(2)
    return KernelLog(module, client) if module or client else None
