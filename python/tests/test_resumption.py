"""TLS session resumption and 0-RTT from Python: mpquic.download against
mpquic.Server. A first download gets a session, a second presenting it
resumes, a third with early_data=True sends its request in 0-RTT (seen in the
client's qlog: a 0-RTT packet carrying the request stream) and the server
accepts it; a server without early_data issues tickets that allow no 0-RTT,
so the request waits for the handshake and is answered all the same."""
import json
import threading
from pathlib import Path

import pytest

import mpquic

CERTS = Path(__file__).resolve().parents[2] / "tests" / "certs"


@pytest.fixture
def serve(tmp_path):
    """Start an mpquic.Server over tmp_path (serving blob.bin) with the given
    options; returns the blob's URL and the body."""
    blob = bytes(i * 31 % 251 for i in range(200_000))
    (tmp_path / "blob.bin").write_bytes(blob)
    running = []

    def start(**opts):
        srv = mpquic.Server(tmp_path, CERTS / "cert.pem", CERTS / "key.pem", listen="127.0.0.1:0",
                            retry=False, **opts)
        t = threading.Thread(target=srv.serve, kwargs={"duration": 60})
        t.start()
        running.append((srv, t))
        port = srv.addresses()[0].rsplit(":", 1)[1]
        return f"https://127.0.0.1:{port}/blob.bin", blob

    yield start
    for srv, t in running:
        srv.stop()
        t.join(10)


def zero_rtt_stream_packets(qlog_file):
    """The 0-RTT packets the client sent that carry stream data."""
    records = [json.loads(r) for r in Path(qlog_file).read_text().split("\x1e")[1:]]
    return [r for r in records[1:] if r["name"] == "quic:packet_sent"
            and r["data"]["header"]["packet_type"] == "0RTT"
            and any(f["frame_type"] == "stream" for f in r["data"].get("frames", []))]


def test_session_resumes_and_early_data_is_accepted(serve, tmp_path):
    url, blob = serve(early_data=True)
    out = tmp_path / "out.bin"
    first = mpquic.download(url, output=out, timeout=10)
    assert out.read_bytes() == blob
    assert first["resumed"] is False and first["early_data"] is False
    assert isinstance(first["session"], bytes) and len(first["session"]) > 32

    second = mpquic.download(url, output=out, timeout=10, session=first["session"])
    assert out.read_bytes() == blob
    assert second["resumed"] is True and second["early_data"] is False

    qdir = tmp_path / "qlog"
    third = mpquic.download(url, output=out, timeout=10, session=second["session"], early_data=True,
                            qlog_dir=qdir)
    assert out.read_bytes() == blob
    assert third["resumed"] is True
    assert third["early_data"] is True, "the server accepted the 0-RTT request"
    assert zero_rtt_stream_packets(third["qlog"]), "the request left in 0-RTT"


def test_no_early_data_with_a_server_without_it(serve, tmp_path):
    url, blob = serve()
    out = tmp_path / "out.bin"
    first = mpquic.download(url, output=out, timeout=10)
    qdir = tmp_path / "qlog"
    again = mpquic.download(url, output=out, timeout=10, session=first["session"], early_data=True,
                            qlog_dir=qdir)
    assert out.read_bytes() == blob
    assert again["resumed"] is True and again["early_data"] is False
    # Its ticket allowed no early data: nothing left in 0-RTT.
    assert zero_rtt_stream_packets(again["qlog"]) == []
