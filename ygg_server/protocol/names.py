"""Names and titles: one line of bounded, printable text (docs/protocol.md, "Names and titles").

Every op that names something (an organization, a workspace, an agent, a group, a person's handle, an agent's
capabilities and tools) or titles a topic or an agent (its job title) checks it here, on both stores and in the
admin CLI alike, so what one client stores every other client and terminal can print: no escape sequences, no
line breaks, no text that reads backwards. An agent's description is checked here too (`clean_text`: lines of
printable text). Message text is not a name (it may hold newlines; protocol.MAX_TEXT bounds it).
"""

from __future__ import annotations

import re
import unicodedata

# kind: (how a refusal names it, the most characters it has). As chat products bound theirs: Slack's channel
# names 80, Zulip's stream and topic names 60; a topic title here has room for an agent's longer summary.
BOUNDS: dict[str, tuple[str, int]] = {
    "org": ("an organization's name", 80),
    "workspace": ("a workspace's name", 80),
    "agent": ("an agent's name", 64),
    "group": ("a group's name", 64),
    "host": ("a host's name", 64),  # ops/hosting.py
    "handle": ("a handle", 40),
    "title": ("a topic's title", 100),
    "job_title": ("an agent's job title", 100),  # set_profile: shown with its name in rosters and lists
    "capability": ("an agent's capability", 100),  # set_profile: matched by `capability:<name>`, listed to others
    "tool": ("an agent's tool", 100),
    "description": ("an agent's description", 2000),
    "device": ("a device's name", 100),  # auth's `device`: what list_sessions shows of a session  # set_profile, `clean_text`: its first line is in rosters
}
TITLE = BOUNDS["title"][1]

# Control characters (Unicode category Cc: C0, DEL, C1), the line and paragraph separators, and the bidi
# embeddings, overrides and isolates (which make a name read other than it is written).
# Text of several lines (`clean_text`) has newlines and tabs too, and nothing else of these.
_SEPARATORS_AND_BIDI = "\u2028\u2029\u202a-\u202e\u2066-\u2069"
_REFUSED = re.compile(f"[\x00-\x1f\x7f-\x9f{_SEPARATORS_AND_BIDI}]")
_REFUSED_IN_TEXT = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_SEPARATORS_AND_BIDI}]")


class BadName(ValueError):
    """A name or title refused; `detail` says which and why."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail


def clean(kind: str, value: object, *, trim: bool = True) -> str:
    """`value` as it is stored: trimmed of surrounding whitespace (`trim`; else such whitespace is refused, for
    names written in a send's `to`), not empty, at most its kind's bound in characters, and without the
    characters `_REFUSED` names. Raises BadName naming the kind and the rule broken."""
    word, bound = BOUNDS[kind]
    if not isinstance(value, str):
        raise BadName(f"{word} is text")
    text = value.strip() if trim else value
    if text != value.strip():
        raise BadName(f"{word} has no spaces around it")
    if not text:
        raise BadName(f"{word} is not empty")
    text = _printable(word, bound, text, _REFUSED, "has no control characters, line breaks or bidi overrides")
    check_look_alikes(kind, text)
    return text


def clean_text(kind: str, value: object) -> str:
    """`value` as it is stored: text of lines (it may be empty, and is not trimmed), at most its kind's bound in
    characters, with newlines and tabs but nothing else `_REFUSED` names (a carriage return included: it
    overwrites a terminal's line). Raises BadName naming the kind and the rule broken."""
    word, bound = BOUNDS[kind]
    if not isinstance(value, str):
        raise BadName(f"{word} is text")
    return _printable(word, bound, value, _REFUSED_IN_TEXT,
                      "has no control characters other than newlines and tabs, no line separators or bidi overrides")


def _printable(word: str, bound: int, text: str, refused: re.Pattern, rule: str) -> str:
    """`text` when it is within `bound` and has nothing `refused` matches; else BadName saying `word` `rule`."""
    if len(text) > bound:
        raise BadName(f"{word} is at most {bound} characters (this one has {len(text)})")
    if bad := refused.search(text):
        raise BadName(f"{word} {rule} (U+{ord(bad.group()):04X} at character {bad.start() + 1})")
    return text


def clean_or_blank(kind: str, value: object) -> str:
    """As `clean`, but a blank string is no name at all: "" (an agent's job title left empty)."""
    return "" if isinstance(value, str) and not value.strip() else clean(kind, value)


def clean_each(kind: str, field: str, values: list) -> list[str]:
    """Each of `values` through `clean`, a refusal naming its place: `capabilities[2]: an agent's capability …`."""
    out = []
    for i, value in enumerate(values):
        try:
            out.append(clean(kind, value))
        except BadName as e:
            raise BadName(f"{field}[{i}]: {e.detail}") from None
    return out


# --- look-alikes (issue 18): who a name stands for must be plain to the eye ---

# Format characters (Unicode category Cf: zero-width spaces and joiners, direction marks, the BOM, invisible
# operators) are invisible: `re\u200bsearcher` reads as `researcher`. A name has none, but a zero-width joiner
# between two symbols (an emoji sequence: 👩‍💻) in a name that is not addressed by typing it.
ZWJ = "\u200d"

# The scripts a name of the addressed kinds (a handle, an agent's, a group's) may mix, as Unicode's "highly
# restrictive" level (UTS #39 §5.2) allows: one script, or Latin with the scripts Chinese, Japanese and Korean
# are written in together.
_TOGETHER = (frozenset({"LATIN", "CJK", "HIRAGANA", "KATAKANA"}), frozenset({"LATIN", "CJK", "BOPOMOFO"}),
             frozenset({"LATIN", "CJK", "HANGUL"}))
ADDRESSED = frozenset({"handle", "agent", "group"})
NAMED = ADDRESSED | {"org", "workspace", "capability"}  # names, not titles: refused format characters

# Letters of other scripts that are drawn as Latin ones (a part of Unicode's confusables.txt: Cyrillic and Greek),
# folded into the Latin letter when handles are compared (`handle_key`), so an all-Cyrillic `аlісе` is `alice`.
_LOOKS_LATIN = str.maketrans({
    "а": "a", "в": "b", "с": "c", "ԁ": "d", "е": "e", "һ": "h", "і": "i", "ј": "j", "к": "k", "ӏ": "l", "м": "m",
    "н": "h", "о": "o", "р": "p", "ԛ": "q", "г": "r", "ѕ": "s", "т": "t", "у": "y", "х": "x", "ԝ": "w", "ь": "b",
    "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u", "χ": "x",
    "γ": "y", "ѵ": "v", "ɡ": "g", "ı": "i", "ℓ": "l",
})


def script(ch: str) -> str | None:
    """The script of a letter, as the first word of its Unicode name (LATIN, CYRILLIC, CJK, …); None for what
    every script shares (digits, punctuation, symbols, marks)."""
    if not ch.isalpha():
        return None
    return unicodedata.name(ch, "UNKNOWN").split(" ", 1)[0]


def check_look_alikes(kind: str, text: str) -> None:
    """Raise BadName when `text` holds a format character (see ZWJ for the one exception), or, for the kinds
    typed to address someone (`ADDRESSED`), letters of scripts that are not written together (`аlice`: a
    Cyrillic а among Latin letters)."""
    word = BOUNDS[kind][0]
    for i, ch in enumerate(text if kind in NAMED else ""):
        if unicodedata.category(ch) != "Cf":
            continue
        around = text[i - 1:i] + text[i + 1:i + 2]
        if ch == ZWJ and kind not in ADDRESSED and len(around) == 2 and not any(c.isalnum() for c in around):
            continue
        raise BadName(f"{word} has no invisible formatting characters (zero-width, direction marks: "
                      f"U+{ord(ch):04X} at character {i + 1})")
    if kind in ADDRESSED:
        scripts = {s for s in map(script, text) if s is not None}
        if len(scripts) > 1 and not any(scripts <= ok for ok in _TOGETHER):
            raise BadName(f"{word} mixes scripts that look alike ({', '.join(sorted(scripts)).lower()}); "
                          "write it in one script")


def handle_key(handle: str) -> str:
    """A handle as handles are compared: NFKC, case-folded, letters drawn as Latin ones folded into them, so
    `alice`, `Alice`, `ａｌｉｃｅ` and a Cyrillic `аlice` are one handle (people.handle_key is unique)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", handle).casefold()).translate(_LOOKS_LATIN)
