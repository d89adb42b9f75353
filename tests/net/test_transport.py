"""How frames leave a connection (ygg_server/net/transport.py): small messages uncompressed, larger ones
compressed, both readable by any permessage-deflate client; a writer's queued frames in one system call."""

from __future__ import annotations

import asyncio
import json

import websockets
from websockets.extensions.permessage_deflate import PerMessageDeflate
from websockets.frames import Frame, Opcode

from ygg_server.net.transport import COMPRESS_FROM, Deflate, HeardConnection


def _pair():
    """A server extension as negotiated for a client offering deflate, and that client's own extension."""
    _, server = Deflate().process_request_params([("client_max_window_bits", None)], [])
    client = PerMessageDeflate(False, False, 12, 12)  # remote = the server's window, local = the client's
    return server, client


def test_small_messages_go_plain_and_large_ones_compressed_and_a_client_reads_them_all_in_any_order():
    server, client = _pair()
    texts = [b'{"op":"acked","ids":[1]}', json.dumps({"op": "page", "items": ["x" * 40] * 60}).encode(),
             b'{"op":"sent"}', json.dumps({"op": "page", "items": ["y" * 40] * 60}).encode(), b"{}"]
    for text in texts:
        wire = server.encode(Frame(Opcode.TEXT, text))
        assert wire.rsv1 == (len(text) >= COMPRESS_FROM), (len(text), wire.rsv1)
        if wire.rsv1:
            assert len(wire.data) < len(text) / 4
        assert client.decode(wire).data == text  # the compression context stays in step across plain ones


async def test_a_client_offering_deflate_gets_small_frames_plain_and_a_large_one_compressed(team):
    await team.person("alice")
    seen: list[tuple[bool, int]] = []
    async with websockets.connect(team.url) as ws:
        (ext,) = ws.protocol.extensions
        decode = ext.decode

        def recording(frame, *, max_size=None):
            out = decode(frame, max_size=max_size)
            if frame.opcode is Opcode.TEXT:
                seen.append((frame.rsv1, len(out.data)))
            return out

        ext.decode = recording
        await ws.send(json.dumps({"op": "auth", "ref": 1, "handle": "alice", "password": "pw-" + "x" * 8}))
        assert json.loads(await ws.recv())["op"] == "session"
        await ws.send(json.dumps({"op": "send", "ref": 2, "workspace": team.ws, "topic": "new", "title": "Long",
                                  "type": "inform", "to": ["researcher"], "text": "words " * 400}))
        while json.loads(await asyncio.wait_for(ws.recv(), 10)).get("ref") != 2:
            pass
    assert seen and all(rsv1 == (size >= COMPRESS_FROM) for rsv1, size in seen), seen
    assert any(rsv1 for rsv1, _ in seen) and not all(rsv1 for rsv1, _ in seen), seen


class _Transport:
    def __init__(self):
        self.writes: list[bytes] = []
        self.eof = False

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.eof = True


def _connection() -> tuple[HeardConnection, _Transport]:
    conn = HeardConnection.__new__(HeardConnection)  # (only what send_data touches)
    conn.protocol = type("P", (), {})()
    conn.protocol.writes = []
    conn.protocol.data_to_send = lambda: [conn.protocol.writes, setattr(conn.protocol, "writes", [])][0]
    conn.transport, conn.debug = _Transport(), False
    return conn, conn.transport


def test_frames_queued_together_leave_in_one_write_and_a_half_close_still_closes():
    conn, transport = _connection()
    conn.protocol.writes = [b"one", b"two", b"three"]
    conn.send_data()
    assert transport.writes == [b"onetwothree"]
    conn.protocol.writes = [b"last", b""]  # b"": websockets asks for a half-close after the close frame
    conn.send_data()
    assert transport.writes[1:] == [b"last"] and transport.eof
