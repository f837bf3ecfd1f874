"""Itanium-mangled C++ names, read just enough (parse/symbols.py): torch's namespaces, the std::string ABI a name
spells (_GLIBCXX_USE_CXX11_ABI), a readable form of a plain nested name; any text in, no exception, bounded work."""

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import assert_linear
from cudaenv.parse.symbols import in_namespaces, readable, string_abi

NEW = "_ZN3c106detail14torchCheckFailEPKcS2_jRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
OLD = "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs"
SPACES = ("c10", "at", "torch", "caffe2")


def test_namespaces():
    assert in_namespaces(NEW, SPACES) and in_namespaces("_ZNK2at10TensorBase4sizeEl", SPACES)
    assert in_namespaces("_ZTVN5torch8autograd4NodeE", SPACES)  # a vtable of a torch class
    assert in_namespaces("_ZN5torch3jit4loadEv", SPACES) and not in_namespaces("_ZN3std6vectorEv", SPACES)
    assert not in_namespaces("_ZN4atom1fEv", SPACES) and not in_namespaces("puts", SPACES)  # "atom" is not "at"
    assert not in_namespaces("_ZN99", SPACES) and not in_namespaces("", SPACES)


def test_the_string_abi_a_name_spells():
    assert string_abi([OLD]) is False and string_abi([NEW]) is True and string_abi([OLD, NEW]) is True
    assert string_abi(["_ZN2at4_ops5zeros4callEv"]) is None and string_abi([]) is None
    assert string_abi(["_ZNK3c1010TensorImpl4nameB5cxx11Ev"]) is True  # the abi tag of a function returning std::string


def test_readable():
    assert readable(OLD) == "c10::detail::torchCheckFail(...)"
    assert readable("_ZNK2at10TensorBase4sizeEl") == "at::TensorBase::size(...)"
    assert readable("_ZN2at3fooE") == "at::foo"
    for odd in ("_ZTVN5torch8autograd4NodeE", "_ZN3c10", "_ZN3c1099E", "puts", "_ZN3c10IiE"):
        assert readable(odd) == odd


@settings(max_examples=300)
@given(st.text(max_size=300))
def test_any_text_never_raises(text):
    for name in (text, "_Z" + text, "_ZN" + text, "_ZNK3c10" + text):
        assert isinstance(in_namespaces(name, SPACES), bool)
        assert string_abi([name]) in (None, True, False)
        assert isinstance(readable(name), str)


def test_work_is_linear_on_long_names():
    """Under the 4,096-character cap (beyond it a name is cut, so the work stops growing)."""
    assert_linear(readable, "1a", head="_ZN", tail="E", size=800)
    assert_linear(lambda text: string_abi([text]), "RKSt", head="_ZN", size=800)
    assert_linear(lambda text: in_namespaces(text, SPACES), "9", head="_ZN", size=800)


@settings(max_examples=400)
@given(st.lists(st.one_of(st.sampled_from(["_ZN3c106detail14torchCheckFailEPKcS2_jRKSs", "_ZNK3c1010TensorImpl4sizeEl",
                                           "_ZN2at4_ops5zeros4callEv", "RKSs", "x_ZRKSs", "_ZN5torch3jit5cxx11Ev",
                                           "_ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcEE", "\0_ZRKSs",
                                           "_ZRKSs" + "a" * 4100, "a" * 4090 + "__cxx11"]),
                            st.text(alphabet="_ZNRKPSsE0123456789abc\0", max_size=30)), max_size=12))
def test_the_joined_search_says_what_the_loop_says(names):
    """string_abi reads a list of names in one search where that says the same as one name at a time (the loop,
    kept for any other iterable): the same answer on any list."""
    assert string_abi(names) == string_abi(iter(names))


def test_names_without_the_old_spelling_are_not_searched(monkeypatch):
    """Counted work (issue 35): 800 torch names that hold neither ``__cxx11`` nor ``Ss`` are answered without the
    old spelling's pattern search (which tries every position of the joined names); one with ``Ss`` is searched once."""
    from cudaenv.parse import symbols

    searched = []

    class Counting:
        def finditer(self, text):
            searched.append(len(text))
            return symbols._OLD_STRING_REAL.finditer(text)

        def search(self, text):
            searched.append(len(text))
            return symbols._OLD_STRING_REAL.search(text)

    monkeypatch.setattr(symbols, "_OLD_STRING_REAL", symbols._OLD_STRING, raising=False)
    monkeypatch.setattr(symbols, "_OLD_STRING", Counting())
    names = ["_ZN2at6native%dop%dEv" % (len("op%d" % i), i) for i in range(800)]
    assert string_abi(names) is None and searched == []
    assert string_abi(names + [OLD]) is False and len(searched) == 1
