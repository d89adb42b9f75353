"""The SQLite writer in its own process, so the event loop and SQLite each have a core.

On a thread (`runners.ThreadRunner`) the writer shares the interpreter lock with the
event loop: on one core's worth of Python they take turns. `WriterProcess` has the
same face for the gateway (`start`, `submit`, `present`, `aclose`) and runs the writer
(the thread runner's loop, over the SQLite store) in a child process instead. What crosses between them is framed by length
on a socket pair, in MessagePack (pickle for what MessagePack cannot hold, such as
an integer wider than 64 bits in a client's `ref`):

    parent -> child: a list of items, one write per turn of the event loop (`_Item`):
        ["cmd", seq, kind, args]   a command, answered by its seq; its args typed (a client frame decodes back
                                   into its Struct: `protocol.ClientFrame`)
        ["present", [ids], None]   who is connected now (as a new writer starts)
        ["present", [in], [out]]   who came and who went since (one connection at a time: not everyone again)
        ["events", bool]           whether anyone follows a workspace (else no topic or balance events)
    child -> parent: one `_Batch` per batch, after its COMMIT: each command's answer (its typed result,
        `protocol.results`, decoding back into its Struct; or the error it ended with, in words)
        and what the batch publishes (each message once; deliveries point at it)

Nothing changes in what is answered or when: a batch's callers hear only after
its COMMIT, in order, and then its deliveries are published. If the parent dies,
the child reads EOF and exits after its batch. If the child dies, the commands it
held are failed (whether they committed is unknown: a client resends with its
`client_id`), every connection is looked at again (a rescan), and a new child starts.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import pickle
import select
import signal
import socket
import struct
from collections import deque
from typing import Callable, Union

import msgspec

from ..clock import now_us
from ..core import Conversation, Message, Topic
from ..core.party import PartyView
from ..gcpolicy import calm_gc
from ..protocol import ClientFrame
from ..protocol.results import Answer
from ..store.rows import Stored
from .commands import Command
from .loop import MAX_BATCH, Published, Writer
from .runners import ThreadRunner

log = logging.getLogger("ygg.writer")
_LEN = struct.Struct("!I")
# an answer's kind: the command's result, or the error it ended with (as words): a ValueError or TypeError
# (the gateway answers those `bad_frame`, as on a thread), or any other
_RESULT, _FAILED, _BAD = 0, 1, 2


class _Batch(msgspec.Struct, array_like=True, gc=False):
    """One committed batch as it crosses to the parent."""

    answers: list[tuple[int, int, Union[Answer, str]]]  # (seq, _RESULT, result) or (seq, _FAILED or _BAD, its words)
    messages: list[Message] = []  # every message stored (Published.messages), then any other delivered
    stored: int = 0  # how many of `messages` were stored in this batch
    deliveries: list[tuple[int, str, bool, str | None, int]] = []  # (id, recipient, wake, reason, message index)
    topics: list[Topic] = []
    balances: list[tuple[str, str, int]] = []
    parties: dict[str, PartyView] = {}
    conversations: dict[str, Conversation] = {}
    rescan: bool = False
    published: bool = False


# A command's argument: a client frame (send, fund, a party change …), an id, a count, a ref, delivery ids
Arg = Union[ClientFrame, str, int, float, None, list[int]]


class _Cmd(msgspec.Struct, array_like=True, tag="cmd"):
    seq: int
    kind: str
    args: list[Arg]


class _Present(msgspec.Struct, array_like=True, tag="present"):
    came: list[str]
    went: list[str] | None  # None: `came` is everyone


class _Events(msgspec.Struct, array_like=True, tag="events"):
    on: bool


_Item = Union[_Cmd, _Present, _Events]
_encoder = msgspec.msgpack.Encoder()
_batch_decoder = msgspec.msgpack.Decoder(_Batch)
_items_decoder = msgspec.msgpack.Decoder(list[_Item])


def _pack(obj) -> bytes:
    """A frame: length, then b"m" and MessagePack, or b"p" and a pickle."""
    try:
        body = b"m" + _encoder.encode(obj)
    except (TypeError, OverflowError, msgspec.EncodeError):
        body = b"p" + pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
    return _LEN.pack(len(body)) + body


def _unpack(body: memoryview, decoder: msgspec.msgpack.Decoder):
    return decoder.decode(body[1:]) if body[0] == ord("m") else pickle.loads(body[1:])


def _frames(buf: bytearray, decoder, take) -> None:
    """Hand each whole frame in `buf` to `take`, and keep the rest."""
    start = 0
    view = memoryview(buf)
    try:
        while len(buf) - start >= 4:
            (n,) = _LEN.unpack_from(buf, start)
            if len(buf) - start - 4 < n:
                break
            take(_unpack(view[start + 4:start + 4 + n], decoder))
            start += 4 + n
    finally:
        view.release()
    del buf[:start]


def _to_wire(answers: list, out: Published | None) -> _Batch:
    wire = []
    for seq, result, error in answers:
        failure = error if error is not None else result if isinstance(result, BaseException) else None
        if failure is None:
            wire.append((seq, _RESULT, result))
        elif isinstance(failure, (ValueError, TypeError)):
            wire.append((seq, _BAD, str(failure)))
        else:
            wire.append((seq, _FAILED, f"{type(failure).__name__}: {failure}"))
    if out is None:
        return _Batch(wire)
    messages = list(out.messages)
    index = {id(m): i for i, m in enumerate(messages)}
    deliveries = []
    for s in out.deliveries:
        i = index.get(id(s.message))
        if i is None:  # (every delivered message is among those stored; this keeps it so regardless)
            i = index[id(s.message)] = len(messages)
            messages.append(s.message)
        deliveries.append((s.id, s.recipient, s.wake, s.reason, i))
    return _Batch(wire, messages, len(out.messages), deliveries, out.topics, out.balances, out.parties,
                  out.conversations, out.rescan, True)


def _from_wire(b: _Batch) -> Published | None:
    if not b.published:
        return None
    msgs = b.messages
    return Published(deliveries=[Stored(i, r, w, why, msgs[m]) for i, r, w, why, m in b.deliveries],
                     messages=msgs[:b.stored], topics=b.topics, balances=b.balances, rescan=b.rescan,
                     parties=b.parties, conversations=b.conversations)


class WriterGone(RuntimeError):
    """The writer process ended before it answered this command."""


class WriterFailed(RuntimeError):
    """The command failed in the writer (its words: the exception's type and message); nothing of it stands."""


class WriterProcess:
    clock = staticmethod(now_us)  # (the child's writer reads the same clock)
    restarts = 0  # children started again after one ended (/metrics)

    def __init__(self, path, store: Callable):
        self.path = path
        self._store = store  # the SQLite store's class: the child makes one on `path`
        self._present: set[str] = set()
        self._events = False
        self._seq = 0
        self._waiting: dict[int, asyncio.Future] = {}
        self._outbox: list[_Item] = []
        self._publish: Callable[[Published], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._proc = None
        self._transport: asyncio.Transport | None = None
        self._closing = False
        self._connecting: asyncio.Task | None = None
        self._started = 0.0  # when the current child started (loop time)
        self._backoff = 0.0  # the wait before starting a child again, when they keep ending at once

    # --- lifecycle ---

    async def open(self) -> None:
        """(The child opens its store.)"""

    def connect(self):
        """A connection beside the writer's, for the ops (reads and management) the gateway runs."""
        return self._store.ops_connection_at(self.path)

    def start(self, loop: asyncio.AbstractEventLoop, publish: Callable[[Published], None]) -> None:
        self._loop, self._publish = loop, publish
        self._spawn()

    def _spawn(self) -> None:
        ours, theirs = socket.socketpair()
        ctx = multiprocessing.get_context("spawn")  # no fork of a process with threads and an event loop
        try:
            proc = ctx.Process(target=_child, args=(self.path, self._store, theirs), name="ygg-writer", daemon=True)
            proc.start()
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._proc = proc
        self._started = self._loop.time()
        self._outbox[:0] = [_Present(sorted(self._present), None), _Events(self._events)]
        self._connecting = self._loop.create_task(self._connect(ours))

    async def _connect(self, sock: socket.socket) -> None:
        self._transport, _ = await self._loop.create_unix_connection(lambda: _Frames(self), sock=sock)
        self._send()  # with what was submitted while there was no child

    async def aclose(self) -> None:
        self._closing = True
        if self._connecting is not None:
            await asyncio.wait([self._connecting], timeout=10)
        if self._transport is not None:
            self._transport.write_eof() if self._transport.can_write_eof() else self._transport.close()
        proc = self._proc
        if proc is not None:
            await asyncio.to_thread(proc.join, 10)
            if proc.is_alive():
                proc.kill()
                await asyncio.to_thread(proc.join, 5)
        if self._transport is not None:
            self._transport.close()
        waiting, self._waiting = self._waiting, {}  # (submitted while a new child was awaited: never sent)
        for fut in waiting.values():
            if not fut.done():
                fut.set_exception(WriterGone("the server is closing"))

    # --- the gateway's side ---

    @property
    def events(self) -> bool:
        """Whether batches carry topic and balance events (the gateway turns it on while someone follows)."""
        return self._events

    @events.setter
    def events(self, on: bool) -> None:
        self._events = on
        self._queue(_Events(on))

    @property
    def present(self) -> frozenset[str]:
        return frozenset(self._present)

    @present.setter
    def present(self, who: frozenset[str]) -> None:
        came, went = who - self._present, self._present - who
        self._present = set(who)
        if came or went:
            self._queue(_Present(list(came), list(went)))

    def seen(self, pid: str, online: bool) -> None:
        """The gateway's word that `pid` came (its first connection) or went (its last): it crosses as such."""
        if online and pid not in self._present:
            self._present.add(pid)
            self._queue(_Present([pid], []))
        elif not online and pid in self._present:
            self._present.discard(pid)
            self._queue(_Present([], [pid]))

    def submit(self, kind: str, *args) -> asyncio.Future:
        fut = self._loop.create_future()
        if self._closing:
            fut.set_exception(WriterGone("the server is closing"))
            return fut
        self._seq += 1
        self._waiting[self._seq] = fut
        self._queue(_Cmd(self._seq, kind, list(args)))
        return fut

    def _queue(self, item: _Item) -> None:
        if not self._outbox and self._loop is not None:
            self._loop.call_soon(self._send)  # everything submitted in this turn of the loop: one write
        self._outbox.append(item)

    def _send(self) -> None:
        if not self._outbox or self._transport is None or self._transport.is_closing():
            return  # (kept until a child is there to take them)
        items, self._outbox = self._outbox, []
        try:
            data = _pack(items)
        except Exception:  # (a client's frame nested too deep for either encoding): that command alone fails
            data = b"".join(self._pack_each(items))
        self._transport.write(data)

    def _pack_each(self, items: list[_Item]):
        """Each item in a frame of its own; a command that cannot cross is answered as bad input (ValueError:
        the gateway's `bad_frame`), the others go on."""
        for item in items:
            try:
                yield _pack([item])
            except Exception as e:
                fut = self._waiting.pop(item.seq, None) if isinstance(item, _Cmd) else None
                if fut is None:
                    raise
                why = "the frame is nested too deep" if isinstance(e, RecursionError) else \
                    f"the frame cannot be handed to the writer ({type(e).__name__})"
                if not fut.done():
                    fut.set_exception(ValueError(why))

    # --- what the child answers ---

    def received(self, batch: _Batch) -> None:
        for seq, kind, value in batch.answers:
            fut = self._waiting.pop(seq, None)
            if fut is None or fut.done():
                continue
            if kind == _FAILED:
                fut.set_exception(WriterFailed(value))
            elif kind == _BAD:
                fut.set_exception(ValueError(value))
            else:
                fut.set_result(value)
        out = _from_wire(batch)
        if out is not None and self._publish is not None:
            try:
                self._publish(out)
            except Exception:  # as on a thread (a callback's error is logged): not a reason to drop the writer
                log.exception("publishing a batch failed")

    def lost(self) -> None:
        """The child ended: fail what it held; unless closing, look at everything again with a new child."""
        waiting, self._waiting = self._waiting, {}
        for fut in waiting.values():
            if not fut.done():
                fut.set_exception(WriterGone("the writer stopped; resend with the same client_id"))
        self._transport = None
        if self._closing:
            return
        code = self._proc.exitcode if self._proc is not None else None
        lived = self._loop.time() - self._started
        self._backoff = 0.0 if lived > 10 else min(5.0, max(0.1, self._backoff * 2))
        log.error("the writer process ended (exit code %s): starting a new one in %.1f s", code, self._backoff)
        self.restarts += 1  # (/metrics: ygg_writer_restarts)
        self._outbox = []  # its commands were just failed: none of them may run later
        self._loop.call_later(self._backoff, self._respawn)

    def _respawn(self) -> None:
        if self._closing:
            return
        try:
            self._spawn()
        except Exception:  # (too many open files, no memory): a writer lost at once, started again after the backoff
            log.exception("the writer process could not be started")
            self._started = self._loop.time()
            self.lost()
            return
        if self._publish is not None:
            self._publish(Published(rescan=True))  # what the old child committed but did not hand over


class _Frames(asyncio.Protocol):
    """The child's frames, each handed to the WriterProcess as it completes."""

    def __init__(self, owner: WriterProcess):
        self.owner = owner
        self.buf = bytearray()

    def data_received(self, data: bytes) -> None:
        self.buf += data
        _frames(self.buf, _batch_decoder, self.owner.received)

    def connection_lost(self, exc) -> None:
        self.owner.lost()


# --- the child ---

def _child(path, make_store: Callable, sock: socket.socket) -> None:
    """Run the writer on `path`: read commands, decide and commit them in batches, send the answers."""
    logging.basicConfig(level=os.environ.get("YGG_LOG_LEVEL", "WARNING"),
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a ^C is the server's to handle: it closes our socket
    writer = ThreadRunner(Writer(make_store(path, now_us), now_us))
    store = writer.store
    calm_gc()
    sock.setblocking(True)
    reader = _Reader(sock)
    todo: deque[Command] = deque()
    try:
        while True:
            wait = 0.0 if todo else store.idle_seconds()
            if not reader.read(wait, writer, todo):
                break
            batch = [todo.popleft() for _ in range(min(len(todo), MAX_BATCH))]
            answers, _, out = writer.tick(batch)  # (SQLite leaves no command for later)
            if answers or out is not None:  # (an idle tick that only looked at the timers says nothing)
                _answer(sock, [(cmd.future, result, error) for cmd, result, error in answers], out,  # future: seq
                        writer.events)
        # the parent closed its end: finish what it sent, then stop
        while todo:
            batch = [todo.popleft() for _ in range(min(len(todo), MAX_BATCH))]
            writer.tick(batch)
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        store.close()


class _Reader:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buf = bytearray()

    def read(self, wait: float, writer: ThreadRunner, todo: deque) -> bool:
        """Take in what has arrived (waiting up to `wait` s for the first bytes); False once the parent is gone."""
        ready, _, _ = select.select([self.sock], [], [], wait)
        if not ready:
            return True
        while True:
            try:
                data = self.sock.recv(1 << 20, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            if not data:
                self._take(writer, todo)
                return False
            self.buf += data
        self._take(writer, todo)
        return True

    def _take(self, writer: ThreadRunner, todo: deque) -> None:
        def take(items: list[_Item]) -> None:
            for item in items:
                if isinstance(item, _Cmd):
                    todo.append(Command(item.kind, tuple(item.args), item.seq, None))
                elif isinstance(item, _Present):
                    if item.went is None:  # everyone, as a new writer starts
                        writer.present = set(item.came)
                    else:
                        writer.present.difference_update(item.went)
                        writer.present.update(item.came)
                else:
                    writer.events = item.on

        _frames(self.buf, _items_decoder, take)


def _answer(sock: socket.socket, answers: list, out: Published | None, events: bool) -> None:
    if out is not None and not events:  # nobody follows a workspace: no topic or balance events to hand over
        out.topics, out.balances, out.conversations = [], [], {}
    sock.sendall(_pack(_to_wire(answers, out)))
