"""Scripts run inside other interpreters (the user's Python), and the sources cudaenv hands to tools.

The scripts are stdlib only, Python 3.7+, and never imported by cudaenv itself. :func:`source` is the one
loader for every file here (``torch_probe.py``, ``framework_probe.py``, ``nvml_probe.py``, ``verify_device.py``, ``verify_dist.py``,
``line_editor.py``, ``check.cu``); a script that uses a shared helper (:data:`SHARED`) is handed out with the helper's
text before its own, since it runs as one source.
"""

import os

# The helpers put before a script's own text: ``say.py`` (its ``said``) for the scripts whose sentences cudaenv says
# again in the reader's language.
SHARED = {"checkpoint_fix.py": ("say.py",), "verify_device.py": ("say.py",), "verify_dist.py": ("say.py",)}


def source(name: str) -> str:
    """The text of the shipped file ``cudaenv/_child/NAME``, after the text of its :data:`SHARED` helpers.

    A plain read of the file beside this module (bounded, regular files only, through
    :func:`cudaenv.host.read_regular`); ``importlib.resources`` (about 30 ms to import, most of ``doctor
    --quick``'s budget) only when the package is not a folder (a zip import).
    """
    text = _read(name)
    return "".join(_read(helper) + "\n\n" for helper in SHARED.get(name, ())) + text


def _read(name: str) -> str:
    from cudaenv.host.files import read_regular

    data = read_regular(os.path.join(os.path.dirname(os.path.abspath(__file__)), name), 4 * 1024 * 1024)
    if data is not None:
        return data.decode("utf-8")
    try:
        from importlib.resources import files

        return files(__name__).joinpath(name).read_text(encoding="utf-8")
    except (ImportError, OSError) as exc:
        raise RuntimeError(
            "cudaenv is installed without its _child/%s file; reinstall it with `pip install --force-reinstall cudaenv` (%s)" % (name, exc)
        ) from None


# The torch probe's script (torch_probe.py, with site_paths.py before it for the static and site-packages passes):
# each block between these lines is left out of the dynamic pass's script (less to compile before `import torch`).
STATIC_BEGIN, STATIC_END = "# static pass {", "# } static pass"


def torch_script(mode: str = "static", read=source) -> str:
    """The torch probe's one ``-c`` source for ``mode``: ``site_paths.py`` then ``torch_probe.py``, or for the
    ``dynamic`` pass ``torch_probe.py`` without its static blocks. ``read(name)``: a file's text (hatch_build.py reads
    the source tree's)."""
    text = read("torch_probe.py")
    if mode != "dynamic":
        return read("site_paths.py") + "\n\n" + text
    kept, skip = [], False
    for line in text.splitlines(True):
        if line.startswith(STATIC_BEGIN):
            skip = True
        elif line.startswith(STATIC_END):
            skip = False
        elif not skip:
            kept.append(line)
    return "".join(kept)


# The torch probe's scripts compiled when the wheel is built (hatch_build.py compile_children), one file a pass
# (CODE_FILES): a format line (CODE_FORMAT, the builder's bytecode magic number, the script's length in characters,
# the length of the next part), the marshalled script text, then its marshalled code. Compiling the 24 KB source was
# about a third of the quick read's child (3.5 to 7 ms, more than its own work under -S): where the child runs the
# interpreter cudaenv runs in (the same file; code_usable checks the rest), it is handed code_loader's few lines instead
# of the source, and loads the code; anywhere else it gets the source as before.
CODE_FORMAT = b"cudaenv-child-code 1"
CODE_FILES = {"static": "torch_probe.static.code", "dynamic": "torch_probe.dynamic.code"}
CODE_LIMIT = 4 * 1024 * 1024


def compile_code(text: str, magic: bytes) -> bytes:
    """The code file of the script ``text``: compiled as ``python -c`` compiles it (``<string>``, no inherited future
    flags, no optimisation), after the format line naming ``magic`` (the compiling interpreter's)."""
    import marshal

    body = marshal.dumps(text)
    code = marshal.dumps(compile(text, "<string>", "exec", dont_inherit=True))
    return b"%s %s %d %d\n" % (CODE_FORMAT, magic.hex().encode(), len(text), len(body)) + body + code


def code_file(mode: str):
    """The path of the compiled script of ``mode`` beside this module, or None where the package has none (an
    editable install, a source tree: the child compiles the source)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), CODE_FILES["dynamic" if mode == "dynamic" else "static"])
    return path if os.path.isfile(path) else None


def code_usable(path: str, text: str, magic: bytes) -> bool:
    """Whether the code file ``path`` holds the script ``text`` (its length: the size check of the start-up bundle)
    compiled to the bytecode ``magic``: its format line read, bounded, from a regular file."""
    from cudaenv.host.files import read_regular

    data = read_regular(path, 256)
    fields = (data or b"").partition(b"\n")[0].split(b" ")
    return len(fields) == 5 and b" ".join(fields[:2]) == CODE_FORMAT and fields[2] == magic.hex().encode() \
        and fields[3] == b"%d" % len(text)


# The -c source that runs a compiled script from its file (Python 3.7+, stdlib only): its code when the file's magic
# number is this interpreter's and there is no -O, else its text compiled as the plain -c would compile it. The
# script's globals are __main__'s and sys.argv is the same, as with the plain -c.
_LOADER = """import sys
def _cudaenv_code(path):
    import marshal, os, stat
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        data = os.read(fd, st.st_size) if stat.S_ISREG(st.st_mode) and st.st_size <= %(limit)d else b""
    finally:
        os.close(fd)
    head, _, body = data.partition(b"\\n")
    fields = head.split(b" ")
    magic = sys.modules["_frozen_importlib_external"].MAGIC_NUMBER.hex().encode()
    if len(fields) == 5 and b" ".join(fields[:2]) == %(format)r and fields[2] == magic and not sys.flags.optimize:
        return marshal.loads(body[int(fields[4]):])
    return compile(marshal.loads(body), "<string>", "exec")
exec(_cudaenv_code(%(path)r))
"""


def code_loader(path: str) -> str:
    """The ``-c`` source that runs the compiled script in ``path`` (:data:`_LOADER`)."""
    return _LOADER % {"limit": CODE_LIMIT, "format": CODE_FORMAT, "path": path}
