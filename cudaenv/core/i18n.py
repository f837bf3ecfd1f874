"""The language people read: which one (``--lang``, ``CUDAENV_LANG``, the locale), marked messages, and their
translation through the stdlib's ``gettext`` catalogs (``cudaenv/locale/<lang>/LC_MESSAGES/cudaenv.mo``).

Two kinds of marks, both read by ``tests/project/test_translations.py`` (the parity test) from the source:

* :func:`M` for a sentence made below the renderers (a doctor rule's title, detail or fix comment): it *is* the
  English text (a ``str``, so JSON, Markdown and Prometheus, which stay English, write it as before) and keeps the
  template and values it was made from, so a renderer can say it in the reader's language with :func:`tr`.
  ``M(a) + b`` and :func:`join` keep every marked piece.
* :func:`t` (and :func:`tn` for a count) for a sentence a renderer writes itself; :func:`N_` marks a literal kept in a
  table and translated where it is shown (``t(TITLES[key])``).

A message without a Chinese entry prints in English (gettext's fallback), so a finding added without one still
reads; the parity test lists it. Values inside a message (paths, versions, ids, commands, quoted errors) are never
translated, but a value that is itself a marked message is.

Nothing is loaded until a renderer asks for a translation in a language other than English: ``cudaenv use`` (which
translates nothing) imports neither gettext nor a catalog. No imports at module level.
"""

ENGLISH = "en"
CHINESE = "zh_CN"
LANGUAGES = (ENGLISH, CHINESE)
DOMAIN = "cudaenv"

# how people write each language: --lang, CUDAENV_LANG and the locale's language part (before "." and "@")
_SPELLINGS = {"en": ENGLISH, "c": ENGLISH, "posix": ENGLISH, "zh": CHINESE, "zh_cn": CHINESE, "zh_hans": CHINESE,
              "zh_sg": CHINESE, "zh_hans_cn": CHINESE}

_state = {"lang": ENGLISH, "catalog": None}


def language_code(text):
    """``zh-CN``, ``zh_CN.UTF-8``, ``zh_Hans``, ``en_US``... as one of :data:`LANGUAGES`; None for a language cudaenv
    has no catalog for (``fr_FR``), or for text that is not a language tag at all."""
    base = str(text or "").strip().split(".", 1)[0].split("@", 1)[0].replace("-", "_").lower()
    if base in _SPELLINGS:
        return _SPELLINGS[base]
    if base.startswith("en_") and base[3:].isalpha():
        return ENGLISH
    if base.startswith("zh_hans_") or base.startswith("zh_cn_"):
        return CHINESE
    return None


def locale_language(env):
    """The language the POSIX locale asks for: the first of ``LC_ALL``, ``LC_MESSAGES``, ``LANG`` that is set
    (that order: POSIX's), Simplified Chinese when it starts ``zh_CN`` or ``zh_Hans``; English otherwise."""
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = (env.get(name) or "").strip()
        if value:
            return CHINESE if value.startswith(("zh_CN", "zh_Hans", "zh-CN", "zh-Hans")) else ENGLISH
    return ENGLISH


def choose_language(env, explicit=None, machine_output=False, setting=None):
    """The language to write in: ``explicit`` (``--lang``) first, then ``setting`` (the ``CUDAENV_LANG`` setting, as
    :func:`cudaenv.core.config.value` read it), then the locale of ``env``.

    ``machine_output``: the command writes for programs or for upstream maintainers (``--json``, ``--format
    markdown``, Prometheus): English unless ``--lang`` asks otherwise. A ``--lang`` cudaenv cannot read is a usage
    error (a wrong ``CUDAENV_LANG`` is the setting's, raised by config)."""
    if explicit is not None:
        code = language_code(explicit)
        if code is None:
            from cudaenv.core.errors import UserError

            raise UserError("--lang %s is not a language cudaenv speaks" % explicit, hint="--lang en or --lang zh-CN")
        return code
    if machine_output:
        return ENGLISH
    if setting is not None:
        return language_code(setting)
    return locale_language(env)


def set_language(lang):
    """Write in ``lang`` (one of :data:`LANGUAGES`) from now on; its catalog is read at the first translation."""
    if _state["lang"] != lang:
        _state["lang"], _state["catalog"] = lang, None


def language():
    return _state["lang"]


# ------------------------------------------------------------------ the catalog
def _catalog():
    """The active language's gettext translations (``NullTranslations`` when no catalog is installed)."""
    cat = _state["catalog"]
    if cat is None:
        cat = _state["catalog"] = load_catalog(_state["lang"])
    return cat


def load_catalog(lang):
    """The compiled catalog of ``lang`` shipped in the wheel (``locale/<lang>/LC_MESSAGES/cudaenv.mo``); in a
    checkout (an editable install, which has no build step) the ``.po`` beside it, compiled in memory; an empty
    catalog (English everywhere) when neither is there."""
    import gettext
    import io
    import os

    folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "locale", lang, "LC_MESSAGES")
    mo = os.path.join(folder, DOMAIN + ".mo")
    data = None
    if os.path.isfile(mo):
        with open(mo, "rb") as fh:
            data = fh.read()
    elif os.path.isfile(os.path.join(folder, DOMAIN + ".po")):
        from cudaenv.core.msgfmt import compile_po, read_po

        with open(os.path.join(folder, DOMAIN + ".po"), encoding="utf-8") as fh:
            data = compile_po(read_po(fh.read()))
    if not data or lang == ENGLISH:
        return gettext.NullTranslations()
    return gettext.GNUTranslations(io.BytesIO(data))


# ------------------------------------------------------------------ marks
def N_(text):
    """Marks a literal for translation where it is shown (a table's words); returns it unchanged."""
    return text


class Msg(str):
    """English text that remembers the marked templates and values it was made of (``parts``: ``(template, values)``
    pairs; ``values`` None for a plain piece that is not translated)."""

    def __add__(self, other):
        if not isinstance(other, str):
            return NotImplemented
        return _joined(str.__add__(self, other), self.parts + _parts(other))

    def __radd__(self, other):
        if not isinstance(other, str):
            return NotImplemented
        return _joined(str.__add__(other, self), _parts(other) + self.parts)


def _joined(text, parts):
    m = Msg(text)
    m.parts = parts
    return m


def _parts(text):
    return text.parts if isinstance(text, Msg) else ((text, None),)


def M(template, *args, **named):
    """A marked sentence: ``template % args`` (or ``% named``) in English, translatable later by :func:`tr`."""
    values = named if named else args
    text = template % values if (args or named) else template
    return _joined(text, ((template, values if (args or named) else ()),))


class Braces(dict):
    """The values of a ``{name}`` template (a row of a data table, ``data/error_patterns.json``), as a message part."""


def filled_message(template, text, values):
    """``text``, which is ``template`` with its ``{name}`` placeholders filled from ``values`` (by the data table's
    own filler), as a marked message: a renderer says the template's translation with the same values."""
    return _joined(text, ((template, Braces(values)),))


def join(sep, items):
    """``sep.join(items)`` that keeps the marked pieces (``sep`` is translated only when it is marked: ``M("; ")``)."""
    items = list(items)
    if not any(isinstance(i, Msg) for i in items):
        return sep.join(items)
    parts = ()
    for n, item in enumerate(items):
        parts += (_parts(sep) if n else ()) + _parts(item)
    return _joined(sep.join(items), parts)


class Listed:
    """The values of a message part that is sentences joined by ``sep``, then, as a whole, edited by ``fn``
    (:func:`listing`)."""

    __slots__ = ("items", "sep", "fn")

    def __init__(self, items, sep, fn):
        self.items, self.sep, self.fn = items, sep, fn

    def said(self):
        text = tr(self.sep).join(tr(item) for item in self.items)
        return self.fn(text) if self.fn is not None else text


def listing(sep, items, fn=None):
    """``fn(sep.join(items))`` (``fn``: a function from text to text applied to the whole, such as escaping it and
    cutting it to a length) that stays a marked message: said in a language by :func:`tr`, each item (a marked
    message) and ``sep`` are said first, then joined, then given to ``fn``, so a cut or an escape never splits a
    translation from its marks. Empty (falsy) when ``items`` is."""
    items = list(items)
    text = sep.join(items)
    return _joined(fn(text) if fn is not None else text, (("%s", Listed(tuple(items), sep, fn)),))


def said_again(text, said, known):
    """A sentence a child script said (``cudaenv/_child/say.py``): ``text``, its English as the child printed it, as a
    marked message when ``said`` is ``[template, [values]]`` with a template of ``known`` (the templates the parent
    knows its child says, each marked with :func:`N_`) whose values make the same English; ``text`` as it is otherwise
    (an older child without ``said``, a newer one, values of another kind)."""
    if not isinstance(said, list) or len(said) != 2:
        return text
    template, values = said
    if not isinstance(template, str) or template not in known or not isinstance(values, list) \
            or not all(isinstance(v, (str, int, float)) for v in values):
        return text
    try:
        message = M(template, *values)
    except (TypeError, ValueError, OverflowError):
        return text
    return message if message == text else text


class Edited:
    """The values of a message part whose words, once said in a language, go through ``fn`` (:func:`edit`)."""

    __slots__ = ("values", "fn")

    def __init__(self, values, fn):
        self.values, self.fn = values, fn


def edit(text, fn):
    """``fn(text)`` (a function from text to text, such as dropping a leading ``sudo``) that stays a marked message: the
    English is ``fn`` of the English, and each marked piece, said in the reader's language by :func:`tr`, goes through
    ``fn`` too (so a translated line is edited, not turned back into English). ``fn`` must work on any piece alone."""
    if not isinstance(text, Msg):
        return fn(text)
    parts = tuple((fn(template), None) if values is None else (template, Edited(values, fn)) for template, values in text.parts)
    return _joined(fn(str(text)), parts)


# ------------------------------------------------------------------ translation (the renderers')
def tr(text):
    """``text`` in the active language: a marked message (:func:`M`) piece by piece; anything else as it is."""
    if _state["lang"] == ENGLISH or not isinstance(text, Msg):
        return text
    cat = _catalog()
    return "".join(template if values is None else _say(cat.gettext(template), values) for template, values in text.parts)


def _say(template, values):
    if isinstance(values, Listed):
        return values.said()
    if isinstance(values, Edited):
        return values.fn(_say(template, values.values))
    if values == ():
        return template
    if isinstance(values, Braces):
        import re

        return re.sub(r"\{(\w+)\}", lambda m: tr(values[m.group(1)]) if m.group(1) in values else m.group(0), template)
    if isinstance(values, dict):
        return template % {k: tr(v) for k, v in values.items()}
    return template % tuple(tr(v) for v in values)


def t(template, *args, **named):
    """A renderer's sentence ``template`` in the active language, formatted with ``args`` (or ``named``); values that
    are marked messages are translated too."""
    if _state["lang"] != ENGLISH:
        template = _catalog().gettext(template)
        if args or named:
            return _say(template, named if named else args)
        return template
    return template % (named if named else args) if (args or named) else template


def tn(singular, plural, n, *args, **named):
    """:func:`t` for a sentence about ``n`` things (``1 GPU`` / ``2 GPUs``); the values default to ``(n,)``."""
    if not (args or named):
        args = (n,)
    if _state["lang"] != ENGLISH:
        return _say(_catalog().ngettext(singular, plural, n), named if named else args)
    return (singular if n == 1 else plural) % (named if named else args)
