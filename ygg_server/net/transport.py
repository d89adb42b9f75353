"""How frames leave a connection: what the gateway changes in `websockets`' defaults.

- A connection remembers when it last heard anything (presence counts pongs).
- A connection past the caps (`net/caps.py`) is answered 503 and closed as it is accepted.
- The frames a connection's writer has queued go out in one `transport.write` (one system call), not one each.
- permessage-deflate leaves small messages uncompressed, as RFC 7692 allows per message (bit RSV1 unset):
  compressing a few hundred bytes of JSON costs more CPU than it saves on the wire. The threshold is the one
  the `ws` library for Node.js uses by default (1,024 bytes). Larger frames (history pages, search results,
  directives) are compressed as before.
"""

from __future__ import annotations

import time
from typing import Sequence

from websockets.asyncio.server import ServerConnection
from websockets.extensions.permessage_deflate import (
    PerMessageDeflate,
    ServerPerMessageDeflateFactory,
)
from websockets.frames import Frame, Opcode

COMPRESS_FROM = 1024  # bytes: a message shorter than this is sent uncompressed


class HeardConnection(ServerConnection):
    """A server connection that remembers when anything last came from the other end: a frame of any kind,
    the pong answering our keepalive ping included (seed 003 §26: offline "when nothing has been heard")."""

    heard: float = 0.0
    caps = None  # the gateway's `net.caps.Caps`: counted in, or refused before the upgrade
    _counted = None  # the peer it was counted for

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        if self.caps is None:
            return
        peer = transport.get_extra_info("peername")
        refused = self.caps.admit(peer)
        if refused is None:
            self._counted = peer
        else:
            transport.write(self.caps.refusal(refused))
            transport.close()

    def connection_lost(self, exc) -> None:
        if self._counted is not None:
            self.caps.release(self._counted)
            self._counted = None
        super().connection_lost(exc)

    def process_event(self, event) -> None:
        self.heard = time.monotonic()
        super().process_event(event)

    def send_data(self) -> None:
        writes = self.protocol.writes
        if len(writes) > 1 and b"" not in writes:  # (b"" asks for a half-close: websockets' own path)
            self.protocol.writes = [b"".join(writes)]
        super().send_data()


async def send_texts(ws: ServerConnection, texts: Sequence[bytes]) -> None:
    """Send each UTF-8 text as its own message, in order, written out together (then wait for the buffer to
    drain, as `send` does). Raises ConnectionClosed as `send` does."""
    async with ws.send_context():
        for text in texts:
            ws.protocol.send_text(text)


class _SmallPlain(PerMessageDeflate):
    def encode(self, frame: Frame) -> Frame:
        if frame.fin and frame.opcode in (Opcode.TEXT, Opcode.BINARY) and len(frame.data) < COMPRESS_FROM:
            return frame  # a whole message, small: as it is (its RSV1 bit unset says so to the client)
        return super().encode(frame)


class Deflate(ServerPerMessageDeflateFactory):
    """permessage-deflate with websockets' server defaults, except that small messages go uncompressed."""

    def __init__(self) -> None:
        super().__init__(server_max_window_bits=12, client_max_window_bits=12, compress_settings={"memLevel": 5})

    def process_request_params(self, params, accepted_extensions):
        response, ext = super().process_request_params(params, accepted_extensions)
        return response, _SmallPlain(ext.remote_no_context_takeover, ext.local_no_context_takeover,
                                     ext.remote_max_window_bits, ext.local_max_window_bits, ext.compress_settings)
