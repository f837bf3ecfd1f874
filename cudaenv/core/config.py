"""Every ``CUDAENV_*`` setting: one table (name, type, default, meaning, flag), one parser, one error style.

Modules read a setting through :func:`value` (or :func:`seconds` for a timeout that a flag may give), never with
``env.get("CUDAENV_...")``: an empty variable is unset; a value that cannot be read is a usage error that names the
variable and an example (``CUDAENV_TORCH_TIMEOUT=abc is not a number of seconds``), the same for every setting.
:func:`settings` gives the rows the configuration reference is generated from (docs/reference/configuration.md).

On the ``cudaenv use`` path (the shell and toolkit settings): no imports at module level; the error type is imported
only when a value is wrong.
"""

# PyTorch's wheel index (https://pytorch.org/get-started/locally/: pip install torch --index-url <this>/cu126): the one
# literal of it in the package; index/, recommend/ and the commands' help read it from here.
TORCH_INDEX = "https://download.pytorch.org/whl"

# kinds: how the text of the variable is read
SECONDS = "seconds"  # a number of seconds > 0
TEXT = "text"  # any non-empty text
PATH = "path"  # a path (of the machine cudaenv runs on, or inside --root where the meaning says so)
CHOICE = "choice"  # one of the listed words
DRIVER = "driver version"  # an NVIDIA driver version: 1 to 4 dot-separated parts of at most 4 digits (550.54.15)
STATE = "state"  # written by cudaenv itself into the shell: not a setting to give, listed so the names are documented
LANGUAGE = "language"  # a language cudaenv has a catalog for: en, zh-CN (also written zh_CN, zh_Hans, zh)
SCRIPT = "script"  # read by the uninstall script cudaenv writes (a shell), not by cudaenv


class Setting:
    """One row of the table. ``default`` is the Python value when unset (None: computed, see ``shown``)."""

    __slots__ = ("name", "kind", "default", "shown", "meaning", "flag", "choices")

    def __init__(self, name, kind, default, meaning, flag="", shown=None, choices=()):
        self.name, self.kind, self.default, self.meaning, self.flag = name, kind, default, meaning, flag
        self.shown = shown if shown is not None else ("" if default is None else "%g" % default if kind == SECONDS else str(default))
        self.choices = choices


_TABLE = (
    Setting("CUDAENV_ROOT", PATH, None, "inspect files under this folder as if it were `/`", "--root", shown="/"),
    Setting("CUDAENV_TIMEOUT", SECONDS, 5.0, "seconds allowed to each command run: nvidia-smi, nvcc, the NVML child, the static torch pass",
            "--timeout"),
    Setting("CUDAENV_TORCH_TIMEOUT", SECONDS, None, "seconds allowed to the dynamic torch pass (the `import torch` child)",
            shown="max(timeout, 60)"),
    Setting("CUDAENV_NVML_LIBRARY", PATH, None, "the NVML library to load (inside `--root`) instead of searching the driver's library folders"),
    Setting("CUDAENV_DRIVER_VERSION", DRIVER, None, "plan for this driver version instead of the probed one (`driver.source` becomes `env`)",
            "--driver (torch recommend)"),
    Setting("CUDAENV_TOOLKITS", TEXT, None, "more toolkit folders, `:`-separated (`;` on Windows): each a toolkit or a folder of toolkits"),
    Setting("CUDAENV_SHELL", TEXT, None, "the shell `use` and `init` write for (bash, zsh, fish, pwsh, sh)", "--shell",
            shown="basename of `$SHELL`"),
    Setting("CUDAENV_TORCH_INDEX", TEXT, TORCH_INDEX, "the wheel index base every printed and read URL uses", "--index-base"),
    Setting("CUDAENV_INDEX_TIMEOUT", SECONDS, 15.0, "seconds the whole `torch refresh` (and `--refresh`) may take: one deadline for every page, connect and read",
            "--timeout (torch refresh)"),
    Setting("CUDAENV_PACKAGE_INDEX", TEXT, None, "the package index (simple API) `cudaenv install` reads the cuda-toolkit releases from",
            shown="PIP_INDEX_URL, else pip's configured or default index"),
    Setting("CUDAENV_CACHE_DIR", PATH, None, "where `torch-index.json`, the index cache, and `facts-memo.json`, what `doctor` read from "
            "torch extensions' libraries (keyed by each file's identity), live", shown="the user cache dir (XDG on Linux, else platformdirs)"),
    Setting("CUDAENV_NO_CACHE", CHOICE, None, "`1`: `doctor` neither reads nor writes `facts-memo.json` (every library is read again)",
            shown="0", choices=("0", "1")),
    Setting("CUDAENV_DATA_DIR", PATH, None, "where `cudaenv install` puts toolkits (`toolkits/<release>/` under it)",
            shown="the user data dir (platformdirs)"),
    Setting("CUDAENV_IMPORT_TIMEOUT", SECONDS, 120.0, "seconds `doctor --import` allows each framework's import-and-device-check child"),
    Setting("CUDAENV_INSTALL_TIMEOUT", SECONDS, 1800.0, "seconds `cudaenv fix` allows the pip/uv install (and `cudaenv install` each pip/uv step, `cudaenv torch guard` the install it runs)"),
    Setting("CUDAENV_VERIFY_TIMEOUT", SECONDS, 600.0, "seconds `cudaenv fix` allows the `cudaenv verify` it runs after the install"),
    Setting("CUDAENV_SYSTEM", CHOICE, None, "the OS to act as: used by the tests and for planning another machine",
            shown="the running OS", choices=("linux", "windows", "darwin")),
    Setting("CUDAENV_LANG", LANGUAGE, None, "the language of what cudaenv writes for people: `en` or `zh-CN` (JSON, Prometheus and "
            "`--format markdown` stay English unless `--lang` asks)", "--lang", shown="the locale: `zh-CN` when LC_ALL, LC_MESSAGES or LANG "
            "starts `zh_CN` or `zh_Hans`, else `en`"),
    Setting("CUDAENV_YES", SCRIPT, None, "`1` answers yes to every step of an uninstall `--script`", "--yes (the script)", shown="0"),
    Setting("CUDAENV_SCRIPT_ROOT", SCRIPT, None, "the root an uninstall `--script` acts on (empty: `/`)", shown="the plan's `--root`"),
    Setting("CUDAENV_ACTIVE", STATE, None, "set by cudaenv: the toolkit `use` switched to"),
    Setting("CUDAENV_SAVED_CUDA_HOME", STATE, None, "set by cudaenv: the `CUDA_HOME` you had before the first `use`"),
    Setting("CUDAENV_SAVED_CUDA_PATH", STATE, None, "set by cudaenv: the `CUDA_PATH` you had before the first `use`"),
    Setting("CUDAENV_AUTO", STATE, None, "set by cudaenv: the `.cuda-version` file the hook applied"),
    Setting("CUDAENV_AUTO_PREV", STATE, None, "set by cudaenv: the toolkit active before the hook switched"),
)

_BY_NAME = {}


def setting(name):
    """The row of ``name``; a name not in the table is a programming error (KeyError)."""
    if not _BY_NAME:
        _BY_NAME.update((s.name, s) for s in _TABLE)
    return _BY_NAME[name]


def settings():
    """The table as rows for the generated reference: name, type, default, meaning, flag."""
    return [{"name": s.name, "type": s.kind, "default": s.shown, "meaning": s.meaning, "flag": s.flag} for s in _TABLE]


def _error(message, example):
    from cudaenv.core.errors import UserError
    from cudaenv.core.i18n import M

    return UserError(message, hint=M("for example %s", example))


def _shown(raw, limit=40):
    """A value as an error shows it: shortened, so a huge one stays one line."""
    return raw if len(raw) <= limit else raw[:limit] + "... (%d characters)" % len(raw)


def _seconds(text, shown, name, example):
    """``text`` as seconds > 0 (finite); errors say ``shown`` ("CUDAENV_X=abc") or ``name`` ("--timeout")."""
    try:
        number = float(text)
    except (TypeError, ValueError):
        from cudaenv.core.i18n import M  # the errors' marked words, imported only for a wrong value

        raise _error(M("%s is not a number of seconds", shown), example) from None
    if not number > 0 or number == float("inf"):
        from cudaenv.core.i18n import M

        raise _error(M("%s must be more than 0 seconds", name), example)
    return number


def value(env, name):
    """The setting ``name`` from ``env`` (a mapping): its parsed value, or the table's default when unset or empty.

    Raises :class:`cudaenv.core.errors.UserError` for a value that cannot be read, the same way for every setting.
    """
    s = setting(name)
    raw = env.get(name)
    if raw is None or not str(raw).strip():
        return s.default
    raw = str(raw).strip()
    if s.kind == SECONDS:
        return _seconds(raw, "%s=%s" % (name, raw), name, "%s=10" % name)
    if s.kind == DRIVER:
        from cudaenv.core.version_strings import parse_driver_version

        if parse_driver_version(raw) is None:
            from cudaenv.core.i18n import M

            raise _error(M("%s=%s is not a driver version", name, _shown(raw)), "%s=550.54.15" % name)
    if s.kind == LANGUAGE:
        from cudaenv.core.i18n import language_code

        if language_code(raw) is None:
            from cudaenv.core.i18n import M

            raise _error(M("%s=%s is not a language cudaenv speaks (en, zh-CN)", name, _shown(raw)), "%s=zh-CN" % name)
    if s.kind == CHOICE and raw not in s.choices:
        from cudaenv.core.i18n import M

        raise _error(M("%s=%s is not one of %s", name, raw, ", ".join(s.choices)), "%s=%s" % (name, s.choices[0]))
    return raw


def seconds(env, name, explicit=None, flag="--timeout"):
    """A timeout: the flag's value ``explicit`` when given (> 0), else the setting ``name``, else its default."""
    if explicit is not None:
        return _seconds(explicit, "%s %s" % (flag, explicit), flag, "%s 10" % flag)
    return value(env, name)


def check(env, names=None):
    """Read every setting of ``names`` (default: all that cudaenv parses) so a wrong one fails before any work."""
    for s in _TABLE:
        if (names is None or s.name in names) and s.kind not in (STATE, SCRIPT):
            value(env, s.name)


def cache_dir(env, fallback=True):
    """cudaenv's cache folder: ``CUDAENV_CACHE_DIR``, else the user cache folder. On Linux that is the XDG Base
    Directory Specification's (https://specifications.freedesktop.org/basedir-spec/latest/): ``$XDG_CACHE_HOME``, else
    ``$HOME/.cache``, each only if absolute ("a relative path ... should be considered invalid and ignored"), then
    ``cudaenv``. Elsewhere, and where neither is absolute, platformdirs' ``user_cache_dir`` (imported only there: it
    costs a doctor more than the memo it finds saves); without ``fallback``, "" there instead (the environment given
    names no cache folder)."""
    explicit = value(env, "CUDAENV_CACHE_DIR")
    if explicit:
        return explicit
    import sys

    if sys.platform.startswith("linux"):
        for base in (env.get("XDG_CACHE_HOME") or "", (env.get("HOME") or "") and str(env.get("HOME")).rstrip("/") + "/.cache"):
            if base.startswith("/"):
                return base.rstrip("/") + "/cudaenv"
    if not fallback:
        return ""
    import platformdirs

    return platformdirs.user_cache_dir("cudaenv", appauthor=False)
