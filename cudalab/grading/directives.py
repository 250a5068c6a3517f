"""Where a C/C++/CUDA source names a file, found as the preprocessor finds it, not as it looks.

A directive is recognised after the compiler's first translation phases: line ends of any kind
(``\\r\\n``, ``\\r``), lines spliced by a backslash before the line end (GCC allows blanks between
the two), and each comment made one space, so that ``#/**/include``, ``# /* ...\\n */ include``
and ``#inc\\<blank><newline>lude`` are all ``#include`` lines. Comments are found the way the
compiler finds them, skipping string and character literals and C++11 raw strings
(``R"x( ... )x"``), inside which a ``/*`` starts nothing.

``file_references`` returns, for one source text, every place that makes the compiler open or look
for a file: ``#include``, ``#include_next``, ``#import`` (a GCC extension that includes once),
``#embed`` (C23), the ``__has_include``, ``__has_include_next`` and ``__has_embed`` operators,
and the ``GCC dependency`` pragma (as a directive or in ``_Pragma``). It errs toward finding
more: the text is also read with ``??/`` as a splice (a trigraph some compilers still honour), and
as it is with no comment removed (``#include "/etc/passwd"`` inside a block comment is still found), and
what any reading finds is returned. ``grading.submission`` decides which of them a student's
kernel may keep.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE_ENDS = re.compile(r"\r\n?")
_SPLICE = re.compile(r"\\[ \t\f\v]*\n")
_TRIGRAPH_SPLICE = re.compile(r"\?\?/[ \t\f\v]*\n")


def _tokens(old_rules: bool) -> re.Pattern[str]:
    """The lexer's tokens that decide where a comment starts: comments, a raw string's opening (up
    to 16 delimiter characters and a parenthesis; C++11, not under ``old_rules``), string and
    character literals (ending at their quote or their line), numbers with C++14's digit
    separators (``1'000``, not a character literal; not under ``old_rules``), identifiers (so that
    ``fooR"x"`` is a name and a string), and runs of anything else."""
    raw = r'|(?P<raw>(?:u8|[uUL])?R"(?P<delim>[^ ()\\\t\v\f\n]{0,16})\()' if not old_rules else ""
    separator = r"'[0-9A-Za-z_]|" if not old_rules else ""
    return re.compile(
        r"(?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))"
        + raw
        + r'|(?P<literal>(?:u8|[uUL])?(?P<quote>["\'])(?:\\.|(?!(?P=quote))[^\\\n])*(?:(?P=quote)|(?=\n)|\Z))'
        + rf"|\.?[0-9](?:{separator}[eEpP][+-]|[0-9A-Za-z_.])*"
        + r"|[A-Za-z_][A-Za-z0-9_]*"
        + r"|[^/\"\'A-Za-z0-9_.]+|.",
        re.S,
    )


_MODERN, _OLD = _tokens(False), _tokens(True)
_HASH = r"(?:#|%:|\?\?=)"  # '#' and its digraph and trigraph
_BLANK = r"[ \t\f\v]"
# A directive that opens or looks for a file, and what follows its name on the line.
_FILE_DIRECTIVE = re.compile(
    rf"^{_BLANK}*{_HASH}{_BLANK}*(?P<kind>include_next|include|import|embed)\b{_BLANK}*(?P<rest>.*)$", re.M
)
_OPERATOR = re.compile(r"\b(?P<kind>__has_include_next|__has_include|__has_embed)\b\s*(?P<rest>.*)$", re.M)
_PRAGMA = re.compile(rf"^{_BLANK}*{_HASH}{_BLANK}*pragma\b(?P<rest>.*)$", re.M)
_PRAGMA_OPERATOR = re.compile(r"\b_Pragma\s*\((?P<rest>[^\n]*)")
_DEPENDENCY = re.compile(r"\bGCC\s+dependency\b")  # "#pragma GCC dependency FILE": is FILE newer?


@dataclass(frozen=True)
class FileReference:
    """One place a source names a file: ``kind`` (``include``, ``__has_include``, ``pragma
    dependency``, ...) and ``rest``, the text after it on its logical line (the file's name where
    it is a plain quoted or angled one; for an operator, after its opening parenthesis)."""

    kind: str
    rest: str


def _blank_comments(text: str, old_rules: bool = False) -> str:
    """``text`` with each comment replaced by one space, string and character literals (raw
    strings included) kept as they are. An unterminated block comment or raw string runs to the
    end, as the compiler reads it; an unterminated quote ends at its line."""
    tokens = _OLD if old_rules else _MODERN
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        m = tokens.match(text, i)
        if m.lastgroup == "comment":
            out.append(" ")
            i = m.end()
        elif m.lastgroup == "raw":
            close = text.find(")" + m.group("delim") + '"', m.end())
            end = n if close < 0 else close + len(m.group("delim")) + 2
            out.append(text[i:end])
            i = end
        else:
            out.append(m.group())
            i = m.end()
    return "".join(out)


def logical_text(text: str, old_rules: bool = False, comments: bool = True) -> str:
    """The text the preprocessor's directives are read from: line ends made ``\\n``, a leading
    byte-order mark dropped, spliced lines joined, comments made spaces (kept with ``comments``
    False). ``old_rules``: as a compiler that honours trigraphs (``??/`` splices too) and knows
    no raw strings or digit separators reads it."""
    text = _LINE_ENDS.sub("\n", text.removeprefix("\ufeff"))
    text = _SPLICE.sub("", text)
    if old_rules:
        text = _TRIGRAPH_SPLICE.sub("", text)
    return _blank_comments(text, old_rules) if comments else text


def _rest(m: re.Match[str]) -> str:
    """What follows a directive or operator on its line, its comments made spaces (for the
    reading that keeps comments), stripped."""
    return _blank_comments(m.group("rest")).strip()


def file_references(text: str) -> list[FileReference]:
    """Every place in a source text that makes the compiler open a file or look for one (see the
    module docstring), in the order found; a place that several readings find, once."""
    found: dict[FileReference, None] = {}  # an ordered set
    readings = (logical_text(text), logical_text(text, old_rules=True), logical_text(text, comments=False))
    for logical in readings:
        refs = [FileReference(m.group("kind"), _rest(m)) for m in _FILE_DIRECTIVE.finditer(logical)]
        for m in _OPERATOR.finditer(logical):
            rest = _rest(m)
            refs.append(FileReference(m.group("kind"), rest[1:].strip() if rest.startswith("(") else rest))
        pragmas = [*_PRAGMA.finditer(logical), *_PRAGMA_OPERATOR.finditer(logical)]
        refs += [FileReference("pragma dependency", "") for m in pragmas if _DEPENDENCY.search(_rest(m))]
        found.update(dict.fromkeys(refs))
    return list(found)
