"""Download one URL over HTTP/3 with aioquic and write the body to a file.

Used by aioquic_interop.rs. Usage:
    aioquic_client.py URL OUTPUT --ca FILE [--key-update]
--key-update asks aioquic for a 1-RTT key update at once: aioquic starts it
the moment the handshake is confirmed (RFC 9001 §6.1).
Prints "status=<code> bytes=<n>" and exits 0 on a complete 2xx response.
"""

import argparse
import asyncio
import ssl
import sys
from urllib.parse import urlparse

from aioquic import tls
from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, QuicEvent


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.done = asyncio.get_event_loop().create_future()
        self.status = None
        self.out = None
        self.bytes = 0

    def get(self, authority, path, out):
        self.out = out
        sid = self._quic.get_next_available_stream_id()
        self.h3.send_headers(
            sid,
            [
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", authority.encode()),
                (b":path", path.encode()),
                (b"user-agent", b"aioquic-test"),
            ],
            end_stream=True,
        )
        self.transmit()

    def quic_event_received(self, event: QuicEvent):
        if isinstance(event, ConnectionTerminated):
            # Report the peer's (or our) close instead of waiting for a timeout.
            print(f"closed error_code={event.error_code:#x} reason={event.reason_phrase!r}")
            if not self.done.done():
                self.done.set_result(False)
            return
        for ev in self.h3.handle_event(event):
            if isinstance(ev, HeadersReceived):
                for k, v in ev.headers:
                    if k == b":status":
                        self.status = int(v)
                if ev.stream_ended and not self.done.done():
                    self.done.set_result(True)
            elif isinstance(ev, DataReceived):
                self.out.write(ev.data)
                self.bytes += len(ev.data)
                if ev.stream_ended and not self.done.done():
                    self.done.set_result(True)


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("output")
    p.add_argument("--ca", required=True)
    p.add_argument("--key-update", action="store_true")
    a = p.parse_args()
    u = urlparse(a.url)
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, verify_mode=ssl.CERT_REQUIRED)
    cfg.load_verify_locations(a.ca)
    cfg.server_name = u.hostname
    with open(a.output, "wb") as out:
        async with connect(u.hostname, u.port or 443, configuration=cfg, create_protocol=Client) as c:
            if a.key_update:
                c._quic.request_key_update()
            c.get(u.netloc, u.path or "/", out)
            await asyncio.wait_for(c.done, timeout=120)
            # The 1-RTT key phase at the end (1 after one update the server followed).
            phase = c._quic._cryptos[tls.Epoch.ONE_RTT].send.key_phase
            print(f"status={c.status} bytes={c.bytes} key_phase={phase}")
            ok = c.status is not None and 200 <= c.status < 300
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
