"""core/i18n and core/msgfmt (issue 33): which language, marked messages, and the catalogs gettext reads."""

import gettext
import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cudaenv.core import i18n
from cudaenv.core.errors import UserError
from cudaenv.core.i18n import CHINESE, ENGLISH, M, choose_language, join, language_code, set_language, t, tn, tr
from cudaenv.core.msgfmt import PoError, compile_po, read_po


def test_the_locale_decides_in_posix_order():
    assert choose_language({}) == ENGLISH
    assert choose_language({"LANG": "zh_CN.UTF-8"}) == CHINESE
    assert choose_language({"LANG": "zh_Hans"}) == CHINESE
    assert choose_language({"LANG": "zh_TW.UTF-8"}) == ENGLISH  # Traditional Chinese: no catalog, English
    assert choose_language({"LANG": "en_US.UTF-8", "LC_MESSAGES": "zh_CN.UTF-8"}) == CHINESE
    assert choose_language({"LANG": "zh_CN.UTF-8", "LC_MESSAGES": "C"}) == ENGLISH
    assert choose_language({"LC_ALL": "C.UTF-8", "LC_MESSAGES": "zh_CN.UTF-8"}) == ENGLISH
    assert choose_language({"LC_ALL": "", "LANG": "zh_CN.GB18030"}) == CHINESE  # an empty LC_ALL is unset


def test_the_flag_then_the_setting_then_the_locale():
    env = {"LANG": "zh_CN.UTF-8"}
    assert choose_language(env, setting="en") == ENGLISH
    assert choose_language({}, setting="zh-CN") == CHINESE
    assert choose_language(env, explicit="en", setting="zh-CN") == ENGLISH
    assert choose_language({}, explicit="zh_Hans") == CHINESE
    with pytest.raises(UserError, match="--lang fr is not a language"):
        choose_language({}, explicit="fr")


def test_output_for_programs_stays_english_unless_the_flag_asks():
    assert choose_language({"LANG": "zh_CN.UTF-8"}, machine_output=True) == ENGLISH
    assert choose_language({}, setting="zh-CN", machine_output=True) == ENGLISH
    assert choose_language({}, explicit="zh-CN", machine_output=True) == CHINESE


def test_language_spellings():
    for text in ("zh-CN", "zh_CN", "zh_CN.UTF-8", "zh_Hans", "zh-Hans-CN", "zh", "ZH_cn"):
        assert language_code(text) == CHINESE, text
    for text in ("en", "en_US.UTF-8", "C", "POSIX"):
        assert language_code(text) == ENGLISH, text
    for text in ("fr_FR", "", "zh_TW", "xx_$(reboot)"):
        assert language_code(text) is None, text


def test_a_marked_message_is_its_english_text():
    m = M("%s hung: the GPU or driver is wedged", "nvidia-smi")
    assert m == "nvidia-smi hung: the GPU or driver is wedged" and isinstance(m, str)
    assert json.dumps({"title": m}) == '{"title": "nvidia-smi hung: the GPU or driver is wedged"}'
    assert M("plain") == "plain" and M("%(n)d GPUs", n=2) == "2 GPUs"
    whole = "A: " + M("none") + " and " + join("; ", [M("no"), "x"])
    assert whole == "A: none and no; x"
    assert [p[0] for p in whole.parts] == ["A: ", "none", " and ", "no", "; ", "x"]
    assert tr(whole) == whole  # English: as it is


def test_marked_messages_in_chinese(chinese):
    assert tr(M("No problems found.")) == "未发现问题。"
    assert t("Hints") == "建议"
    assert tn("%d error", "%d errors", 3) == "3 个错误"
    # a value that is itself a marked message is translated, other values never
    assert t("none in %s", M("the packages of %s", "/usr/bin/python3")) == "无（在 /usr/bin/python3 的包中）"
    assert tr("just a str") == "just a str"
    # a message without an entry (a finding landed without one) prints in English
    assert tr(M("a sentence no catalog has: %s", "x")) == "a sentence no catalog has: x"
    assert tr("prefix " + M("No problems found.")) == "prefix 未发现问题。"


def test_nothing_is_loaded_until_a_translation_is_asked_for():
    set_language(CHINESE)
    try:
        assert i18n._state["catalog"] is None
        t("Hints")
        assert i18n._state["catalog"] is not None
    finally:
        set_language(ENGLISH)
    assert i18n._state["catalog"] is None


PO = r'''# a comment
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"
"Plural-Forms: nplurals=1; plural=0;\n"

#: x.py:1
msgid "Hello %s"
msgstr "你好 %s"

msgid "two "
"lines\n"
msgstr "两"
"行\n"

#, fuzzy
msgid "fuzzy one"
msgstr "模糊"

msgid "untranslated"
msgstr ""

msgctxt "menu"
msgid "Open"
msgstr "打开"

msgid "%d file"
msgid_plural "%d files"
msgstr[0] "%d 个文件"

msgid "quote \" and \\ and \t"
msgstr "引号 \" 和 \\ 和 \t"
'''


def test_msgfmt_compiles_what_gettext_reads():
    entries = read_po(PO)
    assert [e.msgid for e in entries][:3] == ["", "Hello %s", "two lines\n"]
    assert [e.fuzzy for e in entries if e.msgid == "fuzzy one"] == [True]
    cat = gettext.GNUTranslations(io.BytesIO(compile_po(entries)))
    assert cat.gettext("Hello %s") == "你好 %s"
    assert cat.gettext("two lines\n") == "两行\n"
    assert cat.gettext("fuzzy one") == "fuzzy one"  # fuzzy: never compiled, as GNU msgfmt
    assert cat.gettext("untranslated") == "untranslated"
    assert cat.pgettext("menu", "Open") == "打开" and cat.gettext("Open") == "Open"
    assert cat.ngettext("%d file", "%d files", 5) == "%d 个文件"
    assert cat.gettext('quote " and \\ and \t') == '引号 " 和 \\ 和 \t'


@pytest.mark.parametrize("bad", ['msgid "x"\nmsgstr "y', 'msgstr "y"', '"floating"', 'msgid "x"\nmsgstr "\\q"',
                                 'msgid "x"\nmsgbogus "y"'])
def test_msgfmt_refuses_what_is_not_po(bad):
    with pytest.raises(PoError, match="line"):
        read_po(bad)


@given(st.text(alphabet=st.sampled_from(list('msgidtr_[]0 "\\\n#,fuzzyx中')), max_size=300))
def test_msgfmt_reads_any_text_or_says_where_it_is_wrong(text):
    try:
        entries = read_po(text)
    except PoError:
        return
    compile_po(entries)  # whatever it read compiles
