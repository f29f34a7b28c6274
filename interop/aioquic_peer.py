"""aioquic's side of an mpquic-interop cell (hq-interop over QUIC).

    aioquic_peer.py client HOST PORT --ca FILE --files ID-SIZE,... [--connections N]
                    [--chacha] [--key-update] [--early-data] [--v2]
    aioquic_peer.py server HOST --cert FILE --key FILE [--retry] [--chacha] [--early-data] [--v2]

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
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, StreamDataReceived
from aioquic.quic.packet import QuicProtocolVersion
from aioquic.tls import CipherSuite

ALPN = ["hq-interop"]


def body(fid, size):
    salt = (fid * 1000003 + size) % (1 << 64)
    words = (size + 7) // 8
    return array.array("Q", ((salt + k) % (1 << 64) for k in range(words))).tobytes()[:size]


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.pending = {}
        self.closed = None

    def fetch(self, fid, size):
        sid = self._quic.get_next_available_stream_id()
        fut = asyncio.get_event_loop().create_future()
        self.pending[sid] = (fid, size, bytearray(), fut)
        self._quic.send_stream_data(sid, f"GET /{fid}-{size}\r\n".encode(), end_stream=True)
        self.transmit()
        return fut

    def quic_event_received(self, ev):
        if isinstance(ev, StreamDataReceived) and ev.stream_id in self.pending:
            fid, size, buf, fut = self.pending[ev.stream_id]
            buf.extend(ev.data)
            if ev.end_stream and not fut.done():
                fut.set_result(None if bytes(buf) == body(fid, size) else f"file {fid}: {len(buf)} bytes, bad")
        elif isinstance(ev, ConnectionTerminated):
            self.closed = f"closed {ev.error_code:#x} {ev.reason_phrase!r}"
            for fid, _, _, fut in self.pending.values():
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

    def quic_event_received(self, ev):
        if not isinstance(ev, StreamDataReceived):
            return
        req = self.requests.setdefault(ev.stream_id, bytearray())
        req.extend(ev.data)
        if not ev.end_stream:
            return
        try:
            fid, size = req.decode().strip().removeprefix("GET /").split("-")
            data = body(int(fid), int(size))
        except ValueError:
            Server.errors.append(f"bad request {bytes(req)!r}")
            return
        self._quic.send_stream_data(ev.stream_id, data, end_stream=True)
        self.transmit()
        Server.served += 1
        if self._quic.tls.early_data_accepted and not self.early:
            self.early = True
            Server.early += 1


def config(a, is_client):
    cfg = QuicConfiguration(is_client=is_client, alpn_protocols=ALPN, idle_timeout=30.0)  # IDLE_TIMEOUT in src/lib.rs
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
    a = p.parse_args()
    asyncio.run(client(a) if a.mode == "client" else server(a))


if __name__ == "__main__":
    main()
