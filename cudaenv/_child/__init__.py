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
# (CODE_FILES): the format line with the builder's bytecode magic number, then the marshalled (source, code). The
# child compiles its 24 KB source in 3.5 to 7 ms, more than its own work under -S; a child whose interpreter has that
# magic number loads the code instead (code_loader's source), any other compiles the source as before.
CODE_FORMAT = b"cudaenv-child-code 1"
CODE_FILES = {"static": "torch_probe.static.code", "dynamic": "torch_probe.dynamic.code"}
CODE_LIMIT = 4 * 1024 * 1024


def compile_code(text: str, magic: bytes) -> bytes:
    """The code file of the script ``text``: compiled as ``python -c`` compiles it (``<string>``, no inherited future
    flags, no optimisation), after the format line naming ``magic`` (the compiling interpreter's)."""
    import marshal

    return b"%s %s\n" % (CODE_FORMAT, magic.hex().encode()) + marshal.dumps((text, compile(text, "<string>", "exec", dont_inherit=True)))


def code_file(mode: str):
    """The path of the compiled script of ``mode`` beside this module, or None where the package has none (an
    editable install, a source tree: the child compiles the source)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), CODE_FILES["dynamic" if mode == "dynamic" else "static"])
    return path if os.path.isfile(path) else None


# The -c source that runs a compiled script: its code from the file when the file is a regular file in the format,
# with this interpreter's magic number, no -O, and the very source given here (the check that it was compiled from
# it); else the source compiled as the plain -c would. Python 3.7+, stdlib only; what the script sees is what the
# plain -c gives it (its globals are __main__'s, sys.argv is the same).
_LOADER = """import sys
def _cudaenv_code(path, source):
    try:
        import marshal, os, stat
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        try:
            st = os.fstat(fd)
            data = os.read(fd, st.st_size) if stat.S_ISREG(st.st_mode) and st.st_size <= %(limit)d else b""
        finally:
            os.close(fd)
        head = %(format)r + b" " + sys.modules["_frozen_importlib_external"].MAGIC_NUMBER.hex().encode() + b"\\n"
        if not sys.flags.optimize and data.startswith(head):
            text, code = marshal.loads(data[len(head):])
            if text == source:
                return code
    except Exception:
        pass
    return compile(source, "<string>", "exec")
exec(_cudaenv_code(%(path)r, %(source)r))
"""


def code_loader(text: str, path: str) -> str:
    """The ``-c`` source that runs the script ``text`` from its compiled file ``path`` (:data:`_LOADER`)."""
    return _LOADER % {"limit": CODE_LIMIT, "format": CODE_FORMAT, "path": path, "source": text}
