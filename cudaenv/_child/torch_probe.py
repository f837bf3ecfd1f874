"""Facts about torch in the interpreter this runs in, as one JSON line on stdout.

Run by cudaenv as ``python -c <this source> static`` or ``... dynamic`` (or ``... site-packages``: only the
interpreter's site-packages dirs, for ``cudaenv uninstall --python``). Stdlib only, Python 3.7+.

* ``static``: never imports torch (under ``-S``, ``doctor --quick``'s, ``site_paths.py`` runs first). Finds the
  package on sys.path (then sys.meta_path's finders), reads ``torch/version.py`` as text (``ast.literal_eval`` of
  its assignments, never ``exec``), the distribution's METADATA and INSTALLER, the installed ``nvidia-*``
  distributions, and facts about the interpreter (version, venv, PEP 668 marker, platform tag, site-packages dirs).
* ``dynamic``: imports torch and asks it about CUDA; every call is guarded, warnings are captured.

The result is printed on one line starting with ``MARKER`` (torch or CUDA libraries may print on stdout: the caller
looks for the marker)."""

import os
import sys

MARKER = "CUDAENV_TORCH_PROBE "


def _strip_cwd_from_path():
    """``python -c`` puts the current directory first on sys.path; the installation is what we describe."""
    cwd = os.getcwd()
    while sys.path and sys.path[0] in ("", ".", cwd):
        sys.path.pop(0)
    return cwd

# static pass {  (each such block is left out of the dynamic pass's script: less to compile before `import torch`)
VERSION_KEYS = ("__version__", "cuda", "hip", "git_version", "debug")
_WORDS = {"None": None, "True": True, "False": False}


def _simple_assignment(line):
    """``name = 'text'``, ``name: Optional[str] = None`` -> (name, value); anything else -> None."""
    left, sep, right = line.partition("=")
    if not sep:
        return None
    name = left.split(":", 1)[0].strip()
    if not name.isidentifier():
        return None
    right = right.strip()
    if right in _WORDS:
        return name, _WORDS[right]
    if len(right) >= 2 and right[0] in "'\"":
        quote = right[0]
        end = right.find(quote, 1)
        body, rest = right[1:end], right[end + 1:].strip()
        if end > 0 and "\\" not in body and (not rest or rest.startswith("#")):
            return name, body
    return None


def parse_version_py(text):
    """The literal assignments of torch/version.py: {"__version__": "2.13.0+cpu", "cuda": None, ...}.

    Plain ``name = 'text'`` / ``name: Optional[str] = None`` lines are read by hand (importing ``ast``
    costs more than the whole rest of the static pass); anything else goes through
    ``ast.literal_eval``. Nothing is ever executed.
    """
    found = {}
    hard = False
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith(VERSION_KEYS):
            continue
        parsed = _simple_assignment(line)
        if parsed is None:
            hard = True
        elif parsed[0] in VERSION_KEYS:
            found[parsed[0]] = parsed[1]
    if hard:
        found.update(_parse_version_py_ast(text))
    return found


def _parse_version_py_ast(text):
    import ast

    found = {}
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return found
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]  # cuda: Optional[str] = '12.6'
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id in VERSION_KEYS:
                try:
                    value = ast.literal_eval(node.value)
                except (ValueError, SyntaxError, TypeError):
                    continue
                if value is None or isinstance(value, (str, bool)):
                    found[target.id] = value
    return found
# } static pass

def to_json(value):
    """A small JSON encoder (importing ``json`` is a measurable part of this script's start-up)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return repr(value) if value == value and value not in (float("inf"), float("-inf")) else "null"
    if isinstance(value, dict):
        return "{" + ", ".join(_json_str(str(k)) + ": " + to_json(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(to_json(v) for v in value) + "]"
    return _json_str(str(value))


def _json_str(text):
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20 or code > 0x7E:
            if code > 0xFFFF:
                code -= 0x10000
                out.append("\\u%04x\\u%04x" % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)))
            else:
                out.append("\\u%04x" % code)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)

# static pass {
def _read(path, limit=2 * 1024 * 1024):
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", "replace")
    except (OSError, ValueError):
        return None


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except (OSError, ValueError):
        return []


def _scan_path_for_torch():
    """What ``import torch`` would find, from sys.path, the way the path finder looks (no importlib import).

    (kind, path): ("package", dir) | ("module", file) | ("namespace", dir) | (None, None).
    """
    namespace = None
    for entry in sys.path:
        base = os.path.join(entry or ".", "torch")
        if os.path.isfile(os.path.join(base, "__init__.py")):
            return "package", base
        for name in _listdir(entry or "."):
            if name == "torch.py" or (name.startswith("torch.") and name.endswith((".so", ".pyd", ".pyc"))):
                return "module", os.path.join(entry or ".", name)
        if namespace is None and os.path.isdir(base):
            namespace = base
    return ("namespace", namespace) if namespace is not None else (None, None)


def _find_torch_spec():
    """The sys.path scan, then ``importlib.util.find_spec``'s search for import hooks (editable installs, zips)."""
    kind, path = _scan_path_for_torch()
    if kind is not None:
        return kind, path
    try:  # each sys.meta_path finder as importlib.util.find_spec asks it, without its imports (3 ms in the -S child)
        spec = (next((s for s in (f.find_spec("torch", None, None) for f in sys.meta_path) if s is not None), None)
                if all(callable(getattr(f, "find_spec", None)) for f in sys.meta_path)
                else __import__("importlib.util").util.find_spec("torch"))  # a legacy finder (no find_spec): importlib's
    except (ImportError, ValueError, AttributeError):
        spec = None
    if spec is None:
        return None, None
    origin = spec.origin if spec.origin not in (None, "namespace") else None
    if origin and os.path.basename(origin) == "__init__.py":
        return "package", os.path.dirname(origin)
    if origin:
        return "module", origin
    locations = list(spec.submodule_search_locations or [])
    return ("namespace", locations[0]) if locations else (None, None)


def parse_metadata(text):
    """(name, version, requires) from a METADATA / PKG-INFO header block."""
    name = version = None
    requires = []
    for line in (text or "").splitlines():
        if not line.strip():
            break
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip().lower(), value.strip()
        if key == "name" and name is None:
            name = value
        elif key == "version" and version is None:
            version = value
        elif key == "requires-dist":
            requires.append(value)
    return name, version, requires


def _dist_name(folder):
    """``nvidia_cudnn_cu12-9.5.1.17.dist-info`` -> ("nvidia-cudnn-cu12", "9.5.1.17")."""
    for suffix in (".dist-info", ".egg-info"):
        if folder.endswith(suffix):
            stem = folder[: -len(suffix)]
            name, sep, version = stem.partition("-")
            return (name.replace("_", "-").replace(".", "-").lower(), version.split("-py")[0]) if sep else None
    return None


def _torch_distribution(location):
    """The dist-info (or egg-info) folder of torch in ``location``, or None."""
    for entry in _listdir(location):
        parsed = _dist_name(entry)
        if parsed and parsed[0] in ("torch", "pytorch"):
            return os.path.join(location, entry)
    return None


def _installer(dist_dir):
    if dist_dir is None:
        return None
    text = _read(os.path.join(dist_dir, "INSTALLER"))
    return text.strip().splitlines()[0].strip().lower() if text and text.strip() else None


def _conda_owns_torch(prefix):
    meta = os.path.join(prefix, "conda-meta")
    for entry in _listdir(meta):
        if entry.endswith(".json") and (entry.startswith("pytorch-") or entry.startswith("torch-")):
            rest = entry.split("-", 1)[1]
            if rest[:1].isdigit():
                return True
    return False


def _site_packages():
    """This interpreter's site-packages dirs: site's (and the user site), sysconfig's purelib and platlib, and the
    sys.path entries named site-packages or dist-packages; existing folders only, each once, in sys.path's order (the
    import system's), others after. The one place cudaenv learns them (``static``, ``site-packages`` modes)."""
    dirs = []
    try:
        import site

        getsite = getattr(site, "getsitepackages", None)
        if getsite is not None:
            dirs.extend(getsite())
        if getattr(site, "ENABLE_USER_SITE", False):
            user = site.getusersitepackages()
            if user:
                dirs.append(user)
    except Exception:  # an old virtualenv's site.py lacks these
        pass
    try:
        import sysconfig

        paths = sysconfig.get_paths()
        dirs.extend(p for p in (paths.get("purelib"), paths.get("platlib")) if p)
    except Exception:  # a broken sysconfig: the other sources still count
        pass
    for entry in sys.path:
        if entry and os.path.basename(entry.rstrip("/\\")) in ("site-packages", "dist-packages"):
            dirs.append(entry)
    seen = [d for i, d in enumerate(dirs) if d not in dirs[:i] and os.path.isdir(d)]
    at = {os.path.normpath(e): len(sys.path) - 1 - i for i, e in enumerate(reversed(sys.path)) if e}  # first index
    return sorted(seen, key=lambda d: at.get(os.path.normpath(d), len(sys.path)))  # stable: the others keep their order


COMPANIONS = ("torchvision", "torchaudio")


def _distributions(dirs):
    """``name==version`` of the installed nvidia-* distributions and of torch's companions, first hit wins."""
    found = {}
    for d in dirs:
        for entry in _listdir(d):
            parsed = _dist_name(entry)
            if parsed and (parsed[0].startswith("nvidia-") or parsed[0] in COMPANIONS) and parsed[0] not in found:
                found[parsed[0]] = parsed[1]
    nvidia = ["%s==%s" % (name, found[name]) for name in sorted(found) if name.startswith("nvidia-")]
    companions = ["%s==%s" % (name, found[name]) for name in COMPANIONS if name in found]
    return nvidia, companions


def _interpreter_facts():
    import sysconfig

    base = getattr(sys, "base_prefix", sys.prefix)
    in_venv = sys.prefix != base or hasattr(sys, "real_prefix")
    managed = False
    if not in_venv:
        try:
            stdlib = sysconfig.get_path("stdlib")
            managed = bool(stdlib) and os.path.isfile(os.path.join(stdlib, "EXTERNALLY-MANAGED"))
        except Exception:
            managed = False
    try:
        platform_tag = sysconfig.get_platform()
    except Exception:
        platform_tag = None
    try:  # what conda reads for __glibc: "glibc 2.36"
        libc = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        libc = None
    return {
        "executable": sys.executable,
        "python_version": "%d.%d.%d" % tuple(sys.version_info[:3]),
        "prefix": sys.prefix,
        "in_virtualenv": in_venv,
        "externally_managed": managed,
        "platform_tag": platform_tag,
        "libc": libc,
    }


def static():
    cwd = _strip_cwd_from_path()
    skipped = globals()["_site_without_code"]() if sys.flags.no_site else None  # -S: site_paths.py, put before this
    result = _interpreter_facts()
    result.update({"mode": "static", "installed": False, "notes": []})
    if skipped is not None:
        result["site_code_skipped"] = skipped
    site_dirs = _site_packages()
    kind, path = _find_torch_spec()
    torch_dir = None
    if kind == "module":
        result["notes"].append(["module-named-torch", path])  # [kind, path]: the parent says it (probes/torch.py)
        result["shadow"] = path
    elif kind in ("package", "namespace"):
        version_py = os.path.join(path, "version.py")
        text = _read(version_py)
        if text is None:
            result["notes"].append(["folder-without-version", path])
            result["shadow"] = path
        else:
            torch_dir = path
            values = parse_version_py(text)
            result["installed"] = True
            result["version"] = values.get("__version__")
            result["cuda"] = values.get("cuda")
            result["hip"] = values.get("hip")
            result["git_version"] = values.get("git_version")
            if result["version"] is None:
                result["notes"].append(["no-version", version_py])
    if torch_dir is not None:
        location = os.path.dirname(torch_dir)
        result["location"] = location
        if location not in site_dirs and os.path.isdir(location):
            site_dirs.append(location)
        dist = _torch_distribution(location)
        result["dist_info"] = dist
        if dist is not None:
            meta = _read(os.path.join(dist, "METADATA")) or _read(os.path.join(dist, "PKG-INFO")) or ""
            name, version, requires = parse_metadata(meta)
            result["dist_version"] = version
            result["requires"] = [r for r in requires if r.lower().startswith("nvidia-") or r.lower().startswith("nvidia_")]
            result["installer"] = _installer(dist)
        if result.get("installer") in (None, "") and _conda_owns_torch(sys.prefix):
            result["installer"] = "conda"
        elif result.get("installer") == "pip" and _conda_owns_torch(sys.prefix):
            result["installer"] = "conda"
    for name in ("torch", "torch.py"):
        candidate = os.path.join(cwd, name)
        if os.path.exists(candidate) and (torch_dir is None or os.path.dirname(torch_dir) != cwd):
            result["cwd_shadow"] = candidate
    result["site_packages"] = site_dirs
    result["nvidia_packages"], result["companions"] = _distributions(site_dirs)
    return result
# } static pass

def _guard(result, key, func):
    try:
        return func()
    except Exception as exc:  # noqa: BLE001 - every torch call may fail on a broken install
        result.setdefault("errors", {})[key] = "%s: %s" % (type(exc).__name__, exc)
        return None


def _nccl_text(value):
    if value is None:
        return None
    if isinstance(value, (tuple, list)):
        return ".".join(str(v) for v in value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value  # old torch: 2708 or 21805; decoded by the parent (cudaenv.core.version.cudnn_from_int, same scheme)
    return str(value)


def dynamic():
    _strip_cwd_from_path()
    import gc
    import warnings

    result = {"mode": "dynamic", "dynamic": True, "executable": sys.executable}
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # anything torch prints must not mix with our JSON
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            collecting = gc.isenabled()
            gc.disable()  # off during the import, and what it made then frozen: a tenth of the import (docs/design.md)
            try:
                import torch
            except BaseException as exc:  # ImportError, OSError (a missing .so), even SystemExit
                result["import_error"] = "%s: %s" % (type(exc).__name__, exc)
                return result
            finally:
                if collecting:
                    gc.freeze()
                    gc.enable()
            result["version"] = str(getattr(torch, "__version__", "") or "") or None
            result["file"] = getattr(torch, "__file__", None)
            version = getattr(torch, "version", None)
            result["cuda"] = getattr(version, "cuda", None)
            result["hip"] = getattr(version, "hip", None)
            cuda = getattr(torch, "cuda", None)
            if cuda is None:
                result["cuda_error"] = "torch has no torch.cuda module"
                return result
            available = _guard(result, "is_available", cuda.is_available)
            result["cuda_available"] = bool(available) if available is not None else None
            count = _guard(result, "device_count", cuda.device_count)
            result["device_count"] = int(count) if count is not None else None
            if (result["cuda"] or result["hip"]) and not (available and count) and hasattr(cuda, "init"):
                # is_available() only says False; initialising CUDA raises the reason (no driver, error 804, ...)
                _guard(result, "init", cuda.init)
            devices = []
            if available:
                for i in range(result["device_count"] or 0):
                    name = _guard(result, "get_device_name", lambda i=i: cuda.get_device_name(i))
                    cap = _guard(result, "get_device_capability", lambda i=i: cuda.get_device_capability(i))
                    props = _guard(result, "get_device_properties", lambda i=i: cuda.get_device_properties(i))
                    total = getattr(props, "total_memory", None) if props is not None else None
                    devices.append(
                        {
                            "name": name,
                            "capability": "%d.%d" % tuple(cap) if cap else None,
                            "total_memory_mib": int(total) // (1024 * 1024) if total else None,
                        }
                    )
            result["devices"] = devices
            arch = _guard(result, "get_arch_list", cuda.get_arch_list)
            result["arch_list"] = [str(a) for a in arch] if arch else []
            backends = getattr(torch, "backends", None)
            cudnn = getattr(backends, "cudnn", None)
            if cudnn is not None:
                result["cudnn"] = _guard(result, "cudnn.version", cudnn.version)
            nccl = getattr(cuda, "nccl", None)
            if nccl is not None and (result.get("cuda") or result.get("hip")):
                result["nccl"] = _nccl_text(_guard(result, "nccl.version", nccl.version))
        messages = []
        for w in caught:
            text = str(w.message).strip()
            if text and ("CUDA" in text or "cuda" in text or "NVIDIA" in text) and text not in messages:
                messages.append(text)
        for key in ("is_available", "device_count", "init"):
            if key in result.get("errors", {}):
                messages.append(result["errors"][key])
        if messages:
            result["cuda_error"] = "\n".join(messages)
        return result
    finally:
        sys.stdout = real_stdout

# static pass {
def site_packages():
    _strip_cwd_from_path()
    return {"mode": "site-packages", "site_packages": _site_packages()}
# } static pass

def main(argv):
    mode = argv[1] if len(argv) > 1 else "static"
    try:
        result = dynamic() if mode == "dynamic" else site_packages() if mode == "site-packages" else static()
    except Exception as exc:  # the probe itself must always answer
        result = {"mode": mode, "probe_error": "%s: %s" % (type(exc).__name__, exc)}
    sys.stdout.write(MARKER + to_json(result) + "\n")
    sys.stdout.flush()
    if mode == "dynamic" or sys.flags.no_site:  # the answer is out: stdout and stderr closed (the parent's EOF comes
        os.closerange(1, 3)  # now, not after torch's address space is freed), then no interpreter teardown (-S: no .pth
        os._exit(0)  # code ran, so no atexit function of theirs is skipped)
    return 0


if __name__ == "__main__":
    main(sys.argv)
