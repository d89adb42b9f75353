"""Loop detection (seed 000): each agent message's signature, and whether a topic is looping."""

from __future__ import annotations

from zlib import adler32, crc32

from .model import Sig
from .rules import PING_PONG, REPEAT_LIMIT


_WS_TO_SPACE = bytes.maketrans(b"\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f", b" " * 9)  # ASCII whitespace


def normalized(text: str) -> bytes:
    """The text loop detection compares: " ".join(text.lower().split()), UTF-8.

    ASCII text (most of it) takes a path that makes no list of words.
    """
    low = text.lower()
    if not low.isascii():
        return " ".join(low.split()).encode()
    b = low.encode()
    # (`int in bytes` is a memchr; `bytes in bytes` first fails an int conversion, 15x slower)
    if 10 in b or 9 in b or 13 in b or 11 in b or 12 in b or 28 in b or 29 in b or 30 in b or 31 in b:
        b = b.translate(_WS_TO_SPACE)  # \n \t \r \v \f \x1c-\x1f: the ASCII whitespace str.split() knows
    while b.find(b"  ") != -1:
        b = b.replace(b"  ", b" ")
    return b.strip(b" ")  # (returns b itself when there is nothing to strip)


def signature(author: str, to: tuple[str, ...], text: str) -> Sig:
    """Loop detection's memory of a message: who to whom, and its text hashed with case and spacing aside.

    The hash only has to tell apart the few messages a topic remembers: CRC-32 and Adler-32 of
    the normalized text side by side (64 bits), stable across processes, and cheap.
    """
    b = normalized(text)
    return Sig(author, to if len(to) < 2 else tuple(sorted(to)), crc32(b) << 32 | adler32(b))


def loop_suspected(recent: tuple[Sig, ...], sig: Sig) -> bool:
    """Seed 000: "the same back-and-forth or the same text repeated" stops waking.

    Repeated text: the same text (case and spacing aside) already seen REPEAT_LIMIT times
    among the agent messages since a person last wrote. Back-and-forth: this message would
    make PING_PONG agent messages in a row that only two agents exchange with each other.
    """
    if recent and [s.text_hash for s in recent].count(sig.text_hash) >= REPEAT_LIMIT:
        return True
    if len(recent) < PING_PONG - 1 or len(sig.to) != 1:
        return False
    a, b = sig.author, sig.to[0]
    if a == b:
        return False
    for s in recent[1 - PING_PONG:]:  # the PING_PONG - 1 before this one
        if len(s.to) != 1:
            return False
        x, y = s.author, s.to[0]
        if not ((x == a and y == b) or (x == b and y == a)):
            return False
    return True
