"""What a child script says in words, in a form cudaenv can say again in the reader's language (issue 33).

Put before the text of each script that says something (:data:`cudaenv._child.SHARED`), since a child runs as one
``-c`` source or one file and cannot import cudaenv. Stdlib only (nothing at all), Python 3.7+.

A child says a sentence as ``[English, template, [values]]`` (:func:`said`) and prints the English with the template
and values beside it; cudaenv prints the English, or, when it knows the template and the values make the same English,
the template in the reader's language with the same values (:func:`cudaenv.core.i18n.said_again`). An older child,
or a template this cudaenv does not know, keeps its English.
"""


def said(template, *values):
    """``[English, template, [values]]``: ``template % values`` and what it was made of (a list value is words said
    one after another, ``a then b``)."""
    shown = tuple(" then ".join(v) if isinstance(v, list) else v for v in values)
    return [template % shown if values else template, template, list(values)]


def said_fields(text, name="detail"):
    """The event fields of a text: ``{name: English, "said": [template, [values]]}`` for a :func:`said` value,
    ``{name: text}`` for plain text (an exception's own message, which stays as it is)."""
    if isinstance(text, list) and len(text) == 3:
        return {name: text[0], "said": text[1:]}
    return {name: text}
