"""aioquic's side of an mpquic-interop cell (hq-interop over QUIC, or HTTP/3).

    aioquic_peer.py client HOST PORT --ca FILE --files ID-SIZE,... [--connections N]
                    [--chacha] [--key-update] [--early-data] [--v2] [--h3]
    aioquic_peer.py server HOST --cert FILE --key FILE [--retry] [--chacha] [--early-data] [--v2] [--h3]

--h3: HTTP/3 (ALPN h3) with aioquic's H3Connection: the client GETs
https://localhost/ID-SIZE, the server answers 200 with the body.

--v2: QUIC v2 by compatible version negotiation (RFC 9368): the client
starts with v1 and lists v2 first, the server switches a client that lists
v2 first to it.

The client fetches every file (GET /ID-SIZE, all at once; aioquic queues the
streams past the server's limit) and checks each body: the little-endian u64
sequence salt, salt + 1, ... cut to SIZE bytes, salt = ID * 1000003 + SIZE
(interop/src/content.rs). It prints one JSON line {"files": ok, "errors": [...]},
with "early": the connections whose 0-RTT was accepted, under --early-data
(the client then sends its requests before the handshake completes; an aioquic
server always accepts 0-RTT on a ticket it issued).
The server prints "port N" once listening, serves until its stdin closes, then
prints the same JSON line for what it served.
"""

import argparse
import array
import asyncio
import json
import ssl
import sys

from aioquic.asyncio import connect, serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, ProtocolNegotiated, StreamDataReceived
from aioquic.quic.packet import QuicProtocolVersion
from aioquic.tls import CipherSuite

ALPN = ["hq-interop"]
ALPN_H3 = ["h3"]


def body(fid, size):
    salt = (fid * 1000003 + size) % (1 << 64)
    words = (size + 7) // 8
    return array.array("Q", ((salt + k) % (1 << 64) for k in range(words))).tobytes()[:size]


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.pending = {}
        self.closed = None
        # HTTP/3 when h3 was offered (as aioquic's own client, from the start).
        self.h3 = H3Connection(self._quic) if self._quic.configuration.alpn_protocols == ALPN_H3 else None

    def fetch(self, fid, size):
        sid = self._quic.get_next_available_stream_id()
        fut = asyncio.get_event_loop().create_future()
        self.pending[sid] = (fid, size, bytearray(), fut, [None])
        if self.h3:
            req = [
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", b"localhost"),
                (b":path", f"/{fid}-{size}".encode()),
                (b"user-agent", b"aioquic-peer"),
            ]
            self.h3.send_headers(sid, req, end_stream=True)
        else:
            self._quic.send_stream_data(sid, f"GET /{fid}-{size}\r\n".encode(), end_stream=True)
        self.transmit()
        return fut

    def received(self, sid, data, end):
        fid, size, buf, fut, status = self.pending[sid]
        buf.extend(data)
        if end and not fut.done():
            if self.h3 and status[0] != b"200":
                fut.set_result(f"file {fid}: status {status[0]!r}")
            else:
                fut.set_result(None if bytes(buf) == body(fid, size) else f"file {fid}: {len(buf)} bytes, bad")

    def quic_event_received(self, ev):
        if self.h3 and not isinstance(ev, ConnectionTerminated):
            for h in self.h3.handle_event(ev):
                if h.stream_id not in self.pending:
                    continue
                if isinstance(h, HeadersReceived):
                    self.pending[h.stream_id][4][0] = dict(h.headers).get(b":status")
                    self.received(h.stream_id, b"", h.stream_ended)
                elif isinstance(h, DataReceived):
                    self.received(h.stream_id, h.data, h.stream_ended)
        elif isinstance(ev, StreamDataReceived) and ev.stream_id in self.pending:
            self.received(ev.stream_id, ev.data, ev.end_stream)
        elif isinstance(ev, ConnectionTerminated):
            self.closed = f"closed {ev.error_code:#x} {ev.reason_phrase!r}"
            for fid, _, _, fut, _ in self.pending.values():
                if not fut.done():
                    fut.set_result(f"file {fid}: {self.closed}")


class Server(QuicConnectionProtocol):
    served = 0
    errors = []
    early = 0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.requests = {}
        self.early = False
        self.h3 = None

    def quic_event_received(self, ev):
        # As aioquic's own server: HTTP/3 once h3 is negotiated.
        if isinstance(ev, ProtocolNegotiated) and ev.alpn_protocol == "h3":
            self.h3 = H3Connection(self._quic)
        if self.h3:
            for h in self.h3.handle_event(ev):
                if isinstance(h, HeadersReceived):
                    fields = dict(h.headers)
                    ok = fields.get(b":method") == b"GET"
                    self.answer(h.stream_id, fields.get(b":path", b"").removeprefix(b"/") if ok else b"")
            return
        if not isinstance(ev, StreamDataReceived):
            return
        req = self.requests.setdefault(ev.stream_id, bytearray())
        req.extend(ev.data)
        if ev.end_stream:
            self.answer(ev.stream_id, bytes(req).strip().removeprefix(b"GET /"))

    def answer(self, sid, name):
        try:
            fid, size = name.decode().split("-")
            data = body(int(fid), int(size))
        except ValueError:
            Server.errors.append(f"bad request {name!r}")
            return
        if self.h3:
            self.h3.send_headers(sid, [(b":status", b"200"), (b"content-length", str(len(data)).encode())])
            self.h3.send_data(sid, data, end_stream=True)
        else:
            self._quic.send_stream_data(sid, data, end_stream=True)
        self.transmit()
        Server.served += 1
        if self._quic.tls.early_data_accepted and not self.early:
            self.early = True
            Server.early += 1


def config(a, is_client):
    alpn = ALPN_H3 if a.h3 else ALPN
    cfg = QuicConfiguration(is_client=is_client, alpn_protocols=alpn, idle_timeout=30.0)  # IDLE_TIMEOUT in src/lib.rs
    cfg.max_data = 32 << 20
    cfg.max_stream_data = 16 << 20
    if a.chacha:
        cfg.cipher_suites = [CipherSuite.CHACHA20_POLY1305_SHA256]
    if a.v2:
        cfg.supported_versions = [QuicProtocolVersion.VERSION_2, QuicProtocolVersion.VERSION_1]
        cfg.original_version = QuicProtocolVersion.VERSION_1
    return cfg


async def client(a):
    cfg = config(a, True)
    cfg.verify_mode = ssl.CERT_REQUIRED
    cfg.load_verify_locations(a.ca)
    cfg.server_name = "localhost"
    files = [tuple(int(x) for x in f.split("-")) for f in a.files.split(",") if f]
    ok, errors, early = 0, [], 0
    tickets = []
    for _ in range(a.connections):
        # Resume with the last session ticket of the previous connection.
        cfg.session_ticket = tickets[-1] if tickets else None
        # With --early-data the requests go before the handshake ends: in
        # 0-RTT when the ticket allows it.
        async with connect(
            a.host,
            a.port,
            configuration=cfg,
            create_protocol=Client,
            session_ticket_handler=tickets.append,
            wait_connected=not a.early_data,
        ) as c:
            if a.key_update:
                c._quic.request_key_update()
            results = await asyncio.gather(*(c.fetch(fid, size) for fid, size in files))
            errors += [r for r in results if r]
            ok += sum(1 for r in results if not r)
            early += int(c._quic.tls.early_data_accepted)
        if errors:
            break
    print(json.dumps(report(a, ok, errors, early)), flush=True)


def report(a, files, errors, early):
    r = {"files": files, "errors": errors[:10]}
    if a.early_data:
        r["early"] = early
    return r


async def server(a):
    cfg = config(a, False)
    cfg.load_cert_chain(a.cert, a.key)
    tickets = {}
    srv = await serve(
        a.host,
        0,
        configuration=cfg,
        create_protocol=Server,
        retry=a.retry,
        session_ticket_fetcher=tickets.pop,
        session_ticket_handler=lambda t: tickets.__setitem__(t.ticket, t),
    )
    print(f"port {srv._transport.get_extra_info('sockname')[1]}", flush=True)
    loop = asyncio.get_event_loop()
    await loop.run_in_executor(None, sys.stdin.read)
    srv.close()
    print(json.dumps(report(a, Server.served, Server.errors, Server.early)), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["client", "server"])
    p.add_argument("host")
    p.add_argument("port", type=int, nargs="?", default=0)
    p.add_argument("--ca")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--files", default="")
    p.add_argument("--connections", type=int, default=1)
    p.add_argument("--chacha", action="store_true")
    p.add_argument("--key-update", action="store_true")
    p.add_argument("--retry", action="store_true")
    p.add_argument("--early-data", action="store_true")
    p.add_argument("--v2", action="store_true")
    p.add_argument("--h3", action="store_true")
    a = p.parse_args()
    asyncio.run(client(a) if a.mode == "client" else server(a))


if __name__ == "__main__":
    main()
