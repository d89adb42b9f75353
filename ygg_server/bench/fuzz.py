"""A long fuzz run of the wire: `python -m ygg_server.bench.fuzz --frames 1000000`.

Feeds hostile frames through `protocol.decode`, and every `send` among them through
`protocol.to_post`, in-process, and checks what docs/security.md promises of them:

- `decode` returns a typed frame of a known op with a ref that is a string or a number, or raises
  `BadFrame`; nothing else (no RecursionError, TypeError, ...);
- the error answer built from any ref `decode` accepted can be encoded;
- `to_post` returns a Post whose server-derived fields (id, author, workspace) are the server's,
  whatever the frame said, or raises `BadFrame`.

It prints frames/s and the count of outcomes: structured errors by code (and by the first words
of their detail), accepted frames by op, posts (and how many were downgraded as malformed).
Any other outcome is a failure: the first few are printed and the exit code is 1.

The frames come from a seeded generator (not Hypothesis: a million frames must be cheap to make):
well-formed frames of every op with fields of every type, client-supplied server fields, invalid
UTF-8, deep nesting, huge numbers, duplicate keys, and byte-level mutations of all of these.
The Hypothesis properties over the same ground live in tests/hostile/test_fuzz.py.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from typing import Callable, Iterator

import msgspec

from .. import protocol

OPS = sorted(protocol.CLIENT_OPS)
FIELDS = (
    "workspace", "conversation", "topic", "title", "type", "to", "state", "waiting_for", "in_reply_to", "text",
    "client_id", "attachment_bytes", "ids", "amount", "agent", "pool", "limit", "before", "query", "status",
    "monitor", "budget", "handle", "role", "name", "api_key", "token", "password", "prefetch", "files", "upload",
    "size", "sha256", "data", "file", "offset",
)
SERVER_FIELDS = ("author", "id", "cost", "created_at", "seq", "malformed", "notice", "duplicate", "deliveries")
WORDS = ("new", "general", "dm:spy", "group:cell", "request", "response", "inform", "done", "waiting",
         "needs_human", "working", "@alice", "researcher", "system.ygg", "human.0", "agent.0", "owner", "viewer",
         "", " ", "\u0000", "\u202e", "\U0001f600", "é", "a" * 300, "null", "true", "[]", "{}", "\\", '"')
NUMBERS = ("0", "-0", "1", "-1", "1.5", "1e308", "-1e308", "1e309", "1e-400", "9223372036854775807",
           "9223372036854775808", "-9223372036854775809", "18446744073709551616", "1" * 400, "1e99999",
           "0.0000000000000000000000001", "123456789012345678901234567890.5e-3", "1E+2", "-0.0")


_enc = msgspec.json.Encoder()
_HUGE = (2**63, -(2**63) - 1, 2**64, 10**30, -(10**30), 2**31, 10**9 + 1, 2**63 - 1)
_REFS = (None, 1, "r", 0, -5, 2**70, 1.5, True, [1], {"a": 1}, "", "é" * 3, 1e300)
_KEYS = FIELDS + SERVER_FIELDS + ("op", "ref")
_CHARS = [chr(c) for c in (*range(32, 127), *range(0x80, 0x800, 7), *range(0x800, 0xD800, 331),
                           *range(0xE000, 0x110000, 4099), 0, 0xFEFF, 0x202E)]


class Gen:
    """Hostile frames, as bytes (binary frames) or str (text frames)."""

    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.corpus: list[bytes] = []
        self.families: list[tuple[float, Callable[[], str | bytes]]] = [
            (30, self.wellformed), (20, self.send), (8, self.duplicates), (8, self.numbers), (6, self.nested),
            (6, self.binary), (12, self.mutated), (4, self.junk), (6, self.wrong_shapes),
        ]
        self._weights = [w for w, _ in self.families]
        self._funcs = [f for _, f in self.families]

    def __iter__(self) -> Iterator[str | bytes]:
        choices, r = self._funcs, self.r
        while True:
            yield r.choices(choices, self._weights)[0]()

    # --- values ---

    def value(self, depth: int = 0):
        r = self.r
        k = int(r.random() * (12 if depth < 3 else 8))
        if k == 0:
            return None
        if k == 1:
            return r.random() < 0.5
        if k == 2:
            return int(r.random() * 20) - 10
        if k == 3:
            return _HUGE[int(r.random() * len(_HUGE))]
        if k == 4:
            return (r.random() - 0.5) * 2e6
        if k in (5, 6):
            return WORDS[int(r.random() * len(WORDS))]
        if k == 7:
            return "".join(_CHARS[int(r.random() * len(_CHARS))] for _ in range(int(r.random() * 12)))
        if k in (8, 9):
            return [self.value(depth + 1) for _ in range(int(r.random() * 4))]
        return {_KEYS[int(r.random() * len(_KEYS))]: self.value(depth + 1) for _ in range(int(r.random() * 4))}

    def ref(self):
        return _REFS[int(self.r.random() * len(_REFS))]

    def dump(self, obj) -> str | bytes:
        if self.r.random() < 0.15:  # non-ASCII as \uXXXX escapes, the rest as raw UTF-8
            return json.dumps(obj)
        return _enc.encode(obj)

    # --- families ---

    def wellformed(self) -> str | bytes:
        r = self.r
        frame = {"op": OPS[int(r.random() * len(OPS))], "ref": self.ref()}
        for _ in range(int(r.random() * 6)):
            frame[FIELDS[int(r.random() * len(FIELDS))]] = self.value()
        s = self.dump(frame)
        if len(self.corpus) < 512:
            self.corpus.append(s if isinstance(s, bytes) else s.encode())
        return s

    def send(self) -> str | bytes:
        r = self.r
        # (a workspace that is not a string is a bad_frame before any content is read: most sends have one)
        frame = {"op": "send", "ref": self.ref(), "workspace": r.choice(("ws-a", "ws-b", "ws-a", "ws-b", 5, None, ["ws-a"])),
                 "topic": r.choice(("new", "t1", None, 7, "")), "text": r.choice(("hi", "x" * r.randrange(0, 3000), 5, None, {"t": 1}))}
        for f in r.sample(FIELDS[:12], r.randrange(0, 8)):
            frame[f] = self.value() if r.random() < 0.5 else r.choice(WORDS)
        for f in r.sample(SERVER_FIELDS, r.randrange(1, 5)):  # the client says who wrote it, its id, its cost...
            frame[f] = self.value()
        if r.random() < 0.05:
            frame["text"] = "x" * (protocol.MAX_TEXT + r.randrange(-2, 3))
        return self.dump(frame)

    def duplicates(self) -> str:
        r = self.r
        pairs = [("op", r.choice(OPS)), ("ref", self.ref())]
        for _ in range(r.randrange(1, 6)):
            pairs.append((r.choice(("op", "ref", "workspace", "author", "text", "to", "type")), self.value()))
        r.shuffle(pairs)
        return "{" + ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in pairs) + "}"

    def numbers(self) -> str:
        r = self.r
        n = r.choice(NUMBERS) if r.random() < 0.7 else ("-" if r.random() < 0.5 else "") + "9" * r.randrange(1, 5000)
        field = r.choice(("ref", "amount", "limit", "before", "budget", "prefetch", "size", "offset", "ids", "op"))
        if field == "ids":
            return '{"op":"ack","ref":1,"ids":[' + n + "]}"
        return '{"op":"' + r.choice(OPS) + '","' + field + '":' + n + "}"

    def nested(self) -> str:
        r = self.r
        depth = r.choice((10, 100, 500, 1000, 5000, 50_000, r.randrange(1, 200_000)))
        k = r.randrange(4)
        if k == 0:
            return "[" * depth + "]" * depth
        if k == 1:
            return '{"op":"send","ref":1,"text":' + '{"a":' * depth + "1" + "}" * depth + "}"
        if k == 2:
            return '{"op":"ping","ref":' + "[" * depth + "]" * depth + "}"
        return "[" * depth  # unbalanced

    def binary(self) -> bytes:
        r = self.r
        k = r.randrange(4)
        if k == 0:
            return r.randbytes(r.randrange(0, 64))
        if k == 1:  # valid JSON, but with invalid UTF-8 inside a string
            bad = r.choice((b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80"))
            return b'{"op":"send","ref":1,"workspace":"w","text":"' + bad + b'"}'
        if k == 2:  # a well-formed frame, as a binary frame
            s = self.wellformed()
            return s if isinstance(s, bytes) else s.encode()
        return b'{"op":"ping","ref":"' + r.randbytes(8) + b'"}'

    def mutated(self) -> bytes:
        r = self.r
        base = bytearray(r.choice(self.corpus) if self.corpus else b'{"op":"ping","ref":1}')
        for _ in range(r.randrange(1, 4)):
            k = r.randrange(4)
            i = r.randrange(len(base) + 1)
            if k == 0 and base:
                base[min(i, len(base) - 1)] = r.randrange(256)
            elif k == 1:
                base[i:i] = bytes([r.choice(b'{}[]":,\\0123456789-eE.ntfu\x00\xff')])
            elif k == 2:
                del base[i:i + r.randrange(1, 4)]
            else:
                base = base[:i]
        return bytes(base)

    def junk(self) -> str:
        r = self.r
        return r.choice(("", " ", "null", "1", '"op"', "[]", "{}", '{"op":null}', '{"op":"PING"}', '{"op":"ping"',
                         "\ufeff{}", '{"op":"ping","ref":NaN}', '{"op":"ping","ref":Infinity}', "{'op':'ping'}",
                         '{"op":"ping"} {"op":"ping"}', '{"op":"ping","ref":1,}', '{"op":"\\u0000"}'))

    def wrong_shapes(self) -> str:
        r = self.r
        return self.dump(r.choice((
            [{"op": "ping"}], {"op": ["send"]}, {"op": {"op": "send"}}, {"op": "send", "ref": 1, "to": {"a": 1}},
            {"op": "send", "ref": 1, "workspace": "w", "type": ["request"]},
            {"op": "send", "ref": 1, "workspace": "w", "state": {"done": 1}},
            {"op": "send", "ref": 1, "workspace": "w", "topic": ["new"]},
            {"op": "ack", "ref": 1, "ids": [2**63]}, {"op": "ack", "ref": 1, "ids": [-(2**63) - 1]},
            {"op": "history", "ref": 1, "workspace": "w", "before": 2**64, "limit": 10**30},
        )))


def check(data: str | bytes, out: Counter, failures: list[str]) -> None:
    """One frame through decode (and to_post for a send); count the outcome, keep what breaks a promise."""
    try:
        frame = protocol.decode(data)
    except protocol.BadFrame as e:
        out["error bad_frame"] += 1
        out["  " + " ".join(e.detail.split()[:2]).rstrip(":")] += 1
        _encodable(e.ref, data, failures)
        return
    except BaseException as e:  # noqa: BLE001 - the point is to see anything else
        failures.append(f"decode raised {type(e).__name__}: {e!r:.200} on {data[:120]!r}")
        return
    op, ref = frame.op, frame.ref
    if op not in protocol.CLIENT_OPS or not isinstance(frame, protocol.Frame) or isinstance(ref, bool) or \
            (ref is not None and not isinstance(ref, (str, int, float))):
        failures.append(f"decode returned {op!r}, {ref!r} on {data[:120]!r}")
        return
    _encodable(ref, data, failures)
    if op != "send":
        out["op " + op] += 1
        return
    try:
        post = protocol.to_post(frame, message_id="server-id", author="server-author", workspace="server-ws")
    except protocol.BadFrame as e:
        out["error bad_frame"] += 1
        out["  " + " ".join(e.detail.split()[:2])] += 1
        return
    except BaseException as e:  # noqa: BLE001
        failures.append(f"to_post raised {type(e).__name__}: {e!r:.200} on {data[:160]!r}")
        return
    if (post.id, post.author, post.workspace) != ("server-id", "server-author", "server-ws"):
        failures.append(f"to_post let the client set a server field: {post!r:.200}")
    out["post malformed" if post.malformed else "post"] += 1


def _encodable(ref, data, failures: list[str]) -> None:
    try:
        protocol.encode(protocol.error(ref, "bad_frame", "x"))
    except BaseException as e:  # noqa: BLE001
        failures.append(f"the answer to ref {ref!r:.60} cannot be encoded ({type(e).__name__}) on {data[:80]!r}")


def run(frames: int, seed: int = 1, quiet: bool = False) -> tuple[Counter, list[str], float]:
    """Check `frames` frames; return the outcomes, the failures, and the seconds spent checking them."""
    out: Counter = Counter()
    failures: list[str] = []
    gen = iter(Gen(seed))
    clock = time.perf_counter
    checking = 0.0
    start = clock()
    for _ in range(frames):
        data = next(gen)
        t = clock()
        check(data, out, failures)
        checking += clock() - t
        if len(failures) >= 20:
            break
    elapsed = clock() - start
    if not quiet:
        total = sum(v for k, v in out.items() if not k.startswith("  "))
        errors = sum(v for k, v in out.items() if k.startswith("error "))
        print(f"{total:,} frames through decode (and to_post for each send) in {elapsed:.1f} s, generation included: "
              f"{total / elapsed:,.0f} frames/s")
        print(f"decode + to_post alone: {checking:.2f} s, {total / checking:,.0f} frames/s")
        print(f"structured errors: {errors:,}; failures (anything else): {len(failures)}")
        for k, v in sorted(out.items(), key=lambda kv: (kv[0].startswith("  "), -kv[1])):
            if not k.startswith("  "):
                print(f"  {k:<28} {v:>10,}")
        print("  bad_frame, by the first words of its detail:")
        for k, v in sorted(((k, v) for k, v in out.items() if k.startswith("  ")), key=lambda kv: -kv[1]):
            print(f"    {k.strip():<26} {v:>10,}")
        for f in failures:
            print("FAIL", f)
    return out, failures, checking


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ygg_server.bench.fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    _, failures, _ = run(args.frames, args.seed)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
