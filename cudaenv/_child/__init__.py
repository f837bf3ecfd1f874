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
