"""The glossary's style rules (docs/zh-glossary.md, "Style") on every Chinese msgstr of the catalog (issue 33):

* a blank between Chinese and Latin letters or numbers (``驱动 550.54.15``, ``GPU 0 的显存``), none between Chinese
  and full-width punctuation;
* the same for a value: where the English sets a placeholder apart with a blank (``(from %s)``), its value is Latin
  text (a path, a version, a tool's name) and the Chinese keeps a blank beside it (``（依据 %s）``, not ``（依据%s）``).
  A placeholder the English writes against a letter (``found none%s``) carries its own separator; a placeholder
  whose value is Chinese words (``它是%s``: ``文件夹``) is listed in :data:`WORD_VALUES`, exactly.

Each check also runs on a planted catalog, so it is shown to fail.
"""

import re

from builders import REPO

PO = REPO / "cudaenv" / "locale" / "zh_CN" / "LC_MESSAGES" / "cudaenv.po"
CJK = "\u3400-\u4dbf\u4e00-\u9fff"
_CJK = re.compile("[%s]" % CJK)
_TOUCHING = re.compile("[%s][A-Za-z0-9]|[A-Za-z0-9][%s]" % (CJK, CJK))
_PUNCT = "，。：；、！？（）"
_BLANK_AT_PUNCT = re.compile("[%s] [%s]|[%s] [%s]" % (CJK, _PUNCT, _PUNCT, CJK))
_PLACEHOLDER = re.compile(r"%(?:\((\w+)\))?[-#0 +]*\d*(?:\.\d+)?[sdirfxXegc]|\{(\w+)\}")


def _catalog():
    from cudaenv.core.msgfmt import read_po

    return [e for e in read_po(PO.read_text(encoding="utf-8")) if e.msgid and e.translated]


def _placeholders(text):
    """[(key, start, end, spelling)]: positional ones numbered in order, named ones by name; a data table's
    ``{if_...}`` (a condition, empty or not) is no value."""
    out, n = [], 0
    for m in _PLACEHOLDER.finditer(text):
        if m.group(2) and m.group(2).startswith("if_"):
            continue
        key = m.group(1) or m.group(2)
        if key is None:
            key, n = n, n + 1
        out.append((key, m.start(), m.end(), m.group(0)))
    return out


def _at(text, i):
    return text[i] if 0 <= i < len(text) else ""


def touching(entries):
    """Chinese written against Latin letters or digits, or a blank between Chinese and full-width punctuation."""
    out = []
    for e in entries:
        for text in e.strs.values():
            plain = _PLACEHOLDER.sub("\x00", text)  # a value is the next check's business
            for m in list(_TOUCHING.finditer(plain)) + list(_BLANK_AT_PUNCT.finditer(plain)):
                out.append("%r: %r" % (e.msgid[:60], plain[max(0, m.start() - 12):m.end() + 12].replace("\x00", "%s")))
    return out


def values_touching(entries, word_values=frozenset()):
    """A placeholder the English sets apart with a blank, written against Chinese in the translation (its value is
    Latin text), unless the message is one of ``word_values`` (its value is Chinese words)."""
    out = []
    for e in entries:
        english = {key: (start, end) for key, start, end, _ in _placeholders(e.msgid)}
        for text in e.strs.values():
            for key, start, end, spelling in _placeholders(text):
                if ".0" in spelling or key not in english or e.msgid in word_values:
                    continue  # %.0s swallows an English plural ending
                e_start, e_end = english[key]
                if (_CJK.match(_at(text, start - 1)) and _at(e.msgid, e_start - 1) in (" ", "")) or \
                        (_CJK.match(_at(text, end)) and _at(e.msgid, e_end) in (" ", "")):
                    out.append("%r: %r" % (e.msgid[:60], text[max(0, start - 12):end + 12]))
    return out


# Messages whose value beside Chinese is itself Chinese (a translated word or sentence), so no blank: exact.
WORD_VALUES = {
    "this machine sees %s",  # 无 GPU / 有 2 块 GPU（...）
    "%s stored in the checkpoint (a device value, not a tensor): map_location does not change it, and code that moves "
    "tensors to it needs that device",  # 一个 torch.device cuda:1 / " 2 个 torch.device ..."
    "%s is %s: fix writes only regular files (it would replace it)",  # 文件夹
    " Yet %s.",  # the container's own asks, in words
    "GPU memory is held by %s",  # 一个已退出的进程
    "CUDA_VISIBLE_DEVICES=%s: %s.%s The GPUs actually visible: %s. nvidia-smi shows %d GPU%s, numbered %s.",  # a sentence
    "it is %s, not a regular file; not read",  # 文件夹
    "entry %r is %s: it and every entry after it are ignored",  # 空条目
    "the oldest release with a build for this machine%s is torch %s %s",  # a suffix in its own brackets
    "... %d more key (--json lists %s)",  # 全部 / 前 %d 个
    "%d deviate from %s",  # 多数节点 / 基准 FILE
    " (* %s; node counts)",  # the same reference
    "The fix %s.",  # the fix's needs, in words
    "%s, which %s",  # a clause
    "the header declares no checksum for %s: its size and format are right, but the content could not be verified",  # 它的归档
    "this looks like an rpm install but rpm is not installed here, so %s cannot be read; on the machine itself run `%s` "
    "to name them",  # 驱动包
    "%s shows: %s%s",  # 内核日志（journalctl -k）
    "%s did not check out (verdict %s: %s); nothing was written",  # 改写后的文件
}


def test_a_blank_between_chinese_and_latin_text_in_every_msgstr():
    entries = _catalog()
    assert len(entries) > 2000
    assert touching(entries) == []


def test_a_blank_beside_every_latin_value():
    entries = _catalog()
    assert values_touching(entries, WORD_VALUES) == []
    # a listed message that sets no value against Chinese any more must leave the list (one gone from the catalog, with
    # its source, is no longer checked: the list does not hold another branch's messages back)
    assert sorted(m for m in WORD_VALUES if not values_touching([e for e in entries if e.msgid == m])
                  and any(e.msgid == m for e in entries)) == []


def test_the_style_checks_fail_on_a_planted_catalog():
    from cudaenv.core.msgfmt import read_po

    planted = read_po('msgid "driver %s"\nmsgstr "驱动%s"\n\nmsgid "%s (from %s)"\nmsgstr "%s（依据%s）"\n\n'
                      'msgid "no GPU found%s"\nmsgstr "没有找到 GPU%s"\n\nmsgid "CUDA 12 here"\nmsgstr "这里是CUDA 12"\n\n'
                      'msgid "ok: done"\nmsgstr "正常 ：完成"\n\nmsgid "it is %s"\nmsgstr "它是%s"\n')
    assert touching(planted) == ["'CUDA 12 here': '这里是CUDA 12'", "'ok: done': '正常 ：完成'"]
    assert values_touching(planted) == ["'driver %s': '驱动%s'", "'%s (from %s)': '%s（依据%s）'", "'it is %s': '它是%s'"]
    assert values_touching(planted, {"it is %s"}) == ["'driver %s': '驱动%s'", "'%s (from %s)': '%s（依据%s）'"]
