"""mpquic.Server: serves a download, and a flood of garbage Initials (Retry off)
creates no connection."""
import hashlib
import os
import socket
import threading
from pathlib import Path

import pytest

import mpquic

CERTS = Path(__file__).resolve().parents[2] / "tests" / "certs"


def _garbage_initial(rng):
    # Long header, Initial, version 1, 8-byte DCID and SCID, no token, a
    # length to the end of a 1200-byte datagram, then random bytes.
    d = bytes([0xC3, 0, 0, 0, 1, 8]) + rng(8) + bytes([8]) + rng(8) + bytes([0, 0x44, 0x96])
    return d + rng(1200 - len(d))


def test_server_serves_and_ignores_garbage_initials(tmp_path):
    blob = os.urandom(300_000)
    (tmp_path / "blob.bin").write_bytes(blob)
    srv = mpquic.Server(tmp_path, CERTS / "cert.pem", CERTS / "key.pem", listen="127.0.0.1:0",
                        retry=False, access_log=tmp_path / "access.log")
    (addr,) = srv.addresses()
    host, port = addr.rsplit(":", 1)
    t = threading.Thread(target=srv.serve, kwargs={"duration": 60})
    t.start()
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for _ in range(300):
                s.sendto(_garbage_initial(os.urandom), (host, int(port)))
        out = tmp_path / "out.bin"
        r = mpquic.download(f"https://127.0.0.1:{port}/blob.bin", timeout=10, output=out)
        assert r["status"] == 200
        assert hashlib.sha256(out.read_bytes()).digest() == hashlib.sha256(blob).digest()
        with pytest.raises(RuntimeError):
            srv.stats()  # not while serving
    finally:
        srv.stop()
        t.join(10)
    assert not t.is_alive()
    with pytest.raises(RuntimeError, match="served already"):
        srv.serve(duration=1)
    st = srv.stats()
    assert st["accepted"] == 1, st
    # All 300 unless the kernel dropped some on a busy machine.
    assert 250 <= st["undecryptable"] <= 300, st
    assert '"GET /blob.bin HTTP/3" 200 300000' in (tmp_path / "access.log").read_text()


def test_server_bad_options(tmp_path):
    with pytest.raises(ValueError, match="not a PEM file of certificates"):
        mpquic.Server(tmp_path, CERTS / "key.pem", CERTS / "key.pem", listen="127.0.0.1:0")
    with pytest.raises(ValueError, match="not a directory"):
        mpquic.Server(tmp_path / "nope", CERTS / "cert.pem", CERTS / "key.pem", listen="127.0.0.1:0")
    with pytest.raises(ValueError, match="bad listen address"):
        mpquic.Server(tmp_path, CERTS / "cert.pem", CERTS / "key.pem", listen="localhost")
    with pytest.raises(ValueError, match="unknown QUIC version"):
        mpquic.Server(tmp_path, CERTS / "cert.pem", CERTS / "key.pem", listen="127.0.0.1:0", quic_version="v3")
