"""mpquic-server's and mpquic-client's qlog files, those Python's
mpquic.Server and mpquic.download write, and the simulator's
(mpquic.simulate), against the qlog JSON Schema
(ci/qlog-schema).

A two-path download (mpquic-client with two local addresses) from a real
mpquic-server, both with --qlog-dir, and the same from Python with
qlog_dir=; every record
of the files they write must validate (header: main schema QlogFileSeq,
events: the QUIC events mpquic emits and its extensions), and the file must
be loadable the way qvis loads JSON-SEQ (split on RS, first record the
header with qlog_version / qlog_format). Deliberately broken records must
fail, so the check can fail.
"""
import copy
import json
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

import mpquic

jsonschema = pytest.importorskip("jsonschema")

from conftest import REPO, _free_udp_port, _server_binary

SCHEMA = json.loads((REPO / "ci" / "qlog-schema" / "mpquic-qlog.schema.json").read_text())


def _validator(definition):
    cls = jsonschema.Draft202012Validator
    cls.check_schema(SCHEMA)
    return cls({**SCHEMA, "$ref": f"#/$defs/{definition}"})


HEADER = _validator("header")
EVENT = _validator("event")


def qvis_records(text):
    """The records as qvis's JSON-SEQ loader reads them: split on RS, trim,
    JSON.parse each; the first must be the header it recognises."""
    assert text.startswith("\x1e"), "a JSON-SEQ file starts with RS"
    parts = text.split("\x1e")[1:]
    assert all(p.endswith("\n") for p in parts), "each record ends with a newline (RFC 7464)"
    records = [json.loads(p.strip()) for p in parts]
    header = records[0]
    assert header.get("qlog_version") is not None and header.get("qlog_format") == "JSON-SEQ"
    assert "trace" in header
    return records


def errors(validator, record):
    return [e.message for e in validator.iter_errors(record)]


@pytest.fixture(scope="module")
def qlog_files(tmp_path_factory):
    """The server's and the client's qlog files of one two-path download of 4 MB."""
    binary = _server_binary()
    client = binary and binary.with_name("mpquic-client")
    if binary is None or not client.is_file():
        pytest.skip("mpquic-server / mpquic-client are not built (cargo build --release -p mpquic-apps)")
    root = tmp_path_factory.mktemp("qlog-www")
    (root / "f.bin").write_bytes(bytes(range(256)) * 16000)
    qdir = tmp_path_factory.mktemp("qlog-out")
    port = _free_udp_port()
    certs = REPO / "tests" / "certs"
    proc = subprocess.Popen(
        [str(binary), "--listen", f"127.0.0.1:{port}", "--root", str(root), "--qlog-dir", str(qdir),
         "--cert", str(certs / "cert.pem"), "--key", str(certs / "key.pem")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(0.5)
        if proc.poll() is not None:
            pytest.fail("mpquic-server exited at start: " + proc.stderr.read().decode(errors="replace"))
        out = root / "out.bin"
        r = subprocess.run([str(client), f"https://127.0.0.1:{port}/f.bin", "--local", "127.0.0.1",
                            "--local", "127.0.0.2", "--insecure", "-o", str(out), "--qlog-dir", str(qdir)],
                           capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        assert out.stat().st_size == 256 * 16000
        time.sleep(0.5)
    finally:
        # SIGTERM: the server closes what is left and flushes its logs.
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    return _one_file_per_side(qdir)


def _one_file_per_side(qdir):
    files = {side: sorted(qdir.glob(f"*_{side}.sqlog")) for side in ["server", "client"]}
    assert all(len(f) == 1 for f in files.values()), files
    # Both ends name the file by the connection's original destination CID.
    assert files["server"][0].name.split("_")[0] == files["client"][0].name.split("_")[0]
    return {side: f[0] for side, f in files.items()}


@pytest.fixture(scope="module")
def python_qlog_files(tmp_path_factory):
    """The qlog files of a two-path download of 4 MB by mpquic.download from
    mpquic.Server, both with qlog_dir=."""
    root = tmp_path_factory.mktemp("pyqlog-www")
    (root / "f.bin").write_bytes(bytes(range(256)) * 16000)
    qdir = tmp_path_factory.mktemp("pyqlog-out")
    certs = REPO / "tests" / "certs"
    srv = mpquic.Server(root, certs / "cert.pem", certs / "key.pem", listen="127.0.0.1:0",
                        scheduler="rr", qlog_dir=qdir)
    port = srv.addresses()[0].rsplit(":", 1)[1]
    t = threading.Thread(target=srv.serve, kwargs={"duration": 60})
    t.start()
    try:
        r = mpquic.download(f"https://127.0.0.1:{port}/f.bin", locals=["127.0.0.1", "127.0.0.2"],
                            qlog_dir=qdir, timeout=20)
        assert r["bytes"] == 256 * 16000 and r["multipath"] and len(r["paths"]) == 2, r
    finally:
        # Stopping closes every connection and flushes the server's log.
        srv.stop()
        t.join(10)
    files = _one_file_per_side(qdir)
    assert Path(r["qlog"]) == files["client"]
    return files


@pytest.fixture(scope="module")
def sim_qlog_files(tmp_path_factory):
    """The qlog files of a two-path download of 4 MB in the simulator, by
    mpquic.simulate with qlog_dir=."""
    qdir = tmp_path_factory.mktemp("simqlog-out")
    r = mpquic.simulate("testbed-2x100", cc="lia", scheduler="rr", bytes=4_000_000, qlog_dir=qdir)
    assert r.summary["established"] and r.summary["completion_s"] is not None, r.summary
    return {side: qdir / f"flow0_{side}.sqlog" for side in ["server", "client"]}


def test_an_unusable_sim_qlog_dir_raises(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(mpquic.SimulationError, match="qlog directory"):
        mpquic.simulate("testbed-2x100", bytes=100_000, qlog_dir=tmp_path / "file" / "q")


LOGS = ["qlog_files", "python_qlog_files", "sim_qlog_files"]


@pytest.mark.parametrize("logs", LOGS)
@pytest.mark.parametrize("side", ["server", "client"])
def test_every_record_validates(request, logs, side):
    qlog_files = request.getfixturevalue(logs)
    records = qvis_records(qlog_files[side].read_text())
    assert errors(HEADER, records[0]) == []
    assert records[0]["trace"]["vantage_point"]["type"] == side
    bad = [(i, r["name"], errors(EVENT, r)) for i, r in enumerate(records[1:], 1) if errors(EVENT, r)]
    assert bad == [], bad[:5]
    times = [r["time"] for r in records[1:]]
    assert times == sorted(times), "events in time order"


@pytest.mark.parametrize("logs", LOGS)
@pytest.mark.parametrize("side", ["server", "client"])
def test_the_log_shows_both_paths(request, logs, side):
    qlog_files = request.getfixturevalue(logs)
    events = qvis_records(qlog_files[side].read_text())[1:]
    names = {e["name"] for e in events}
    expected = ["quic:parameters_set", "quic:connection_state_updated", "quic:packet_sent",
                "quic:packet_received", "quic:recovery_metrics_updated", "quic:tuple_assigned",
                "mpquic:path_event", "quic:connection_id_updated", "quic:stream_state_updated"]
    # The servers (not the simulator) add their path statistics.
    for n in expected + (["mpquic:path_stats"] if side == "server" and logs != "sim_qlog_files" else []):
        assert n in names, n
    tuples = {e["data"]["tuple_id"] for e in events if e["name"] == "quic:tuple_assigned"}
    assert tuples == {"0", "1"}
    for t in ["0", "1"]:
        sent = [e for e in events if e["name"] == "quic:packet_sent" and e["tuple"] == t]
        assert sent and all(e["data"]["header"]["path_id"] == int(t) for e in sent)
    frames = {f["frame_type"] for e in events if e["name"] in ("quic:packet_received", "quic:packet_sent")
              for f in e["data"].get("frames", [])}
    assert {"path_ack", "stream", "path_new_connection_id", "time_stamp"} <= frames, frames
    states = [e["data"]["new"] for e in events if e["name"] == "quic:connection_state_updated"]
    assert states[0] == "attempted" and "handshake_confirmed" in states
    # The connection IDs in use on both paths, ours and the peer's.
    cids = {(e["tuple"], e["data"]["initiator"]) for e in events if e["name"] == "quic:connection_id_updated"}
    assert cids == {(t, who) for t in ["0", "1"] for who in ["local", "remote"]}, cids
    # The request stream (client-initiated bidirectional stream 0) opened.
    opened = [e["data"] for e in events if e["name"] == "quic:stream_state_updated" and e["data"]["new"] == "open"]
    assert {"stream_id": 0, "stream_type": "bidirectional", "old": "idle", "new": "open"} in opened, opened


def test_the_server_closes_with_each_paths_totals(qlog_files):
    events = qvis_records(qlog_files["server"].read_text())[1:]
    closed = [e for e in events if e["name"] == "mpquic:closed"]
    assert len(closed) == 1 and errors(EVENT, closed[0]) == [], closed
    data = closed[0]["data"]
    assert {p["path_id"] for p in data["paths"]} == {0, 1}
    # The last path_stats of each path is written at close: it agrees.
    last = {e["data"]["path_id"]: e["data"] for e in events if e["name"] == "mpquic:path_stats"}
    for p in data["paths"]:
        assert last[p["path_id"]]["sent_bytes"] == p["sent_bytes"], (last, p)
    sent = sum(p["sent_bytes"] for p in data["paths"])
    assert 256 * 16000 < sent <= data["stats"]["sent_bytes"]
    for bad in [lambda d: d.update(stats=str(d["stats"])), lambda d: d["paths"][0].pop("sent_bytes")]:
        e = copy.deepcopy(closed[0])
        bad(e["data"])
        assert errors(EVENT, e), e


def test_broken_records_are_rejected(qlog_files):
    records = qvis_records(qlog_files["server"].read_text())
    header, events = records[0], records[1:]
    first = {n: next(e for e in events if e["name"] == n)
             for n in ["quic:packet_sent", "quic:recovery_metrics_updated", "quic:parameters_set",
                       "quic:tuple_assigned", "quic:connection_closed", "quic:connection_id_updated",
                       "quic:stream_state_updated"]}

    def broken(record, change):
        r = copy.deepcopy(record)
        change(r)
        return r

    bad_headers = [
        broken(header, lambda h: h["trace"].pop("event_schemas")),
        broken(header, lambda h: h.update(file_schema="urn:ietf:params:qlog:file:contained")),
        broken(header, lambda h: h["trace"]["common_fields"]["reference_time"].update(epoch="1970-01-01T00:00:00Z")),
        broken(header, lambda h: h["trace"]["vantage_point"].update(type="Server")),
    ]
    for h in bad_headers:
        assert errors(HEADER, h), h
    sent = first["quic:packet_sent"]
    bad_events = [
        broken(sent, lambda e: e["data"]["header"].update(packet_type="1rtt")),
        broken(sent, lambda e: e["data"]["header"].pop("packet_number")),
        broken(sent, lambda e: e["data"].pop("header")),
        broken(sent, lambda e: e["data"]["frames"].append({"frame_type": "stream", "length": 5, "stream_id": 0})),
        broken(sent, lambda e: e["data"]["frames"].append({"frame_type": "mystery"})),
        broken(sent, lambda e: e.pop("tuple")),
        broken(sent, lambda e: e.update(time=-1)),
        broken(sent, lambda e: e.update(name="transport:packet_sent")),
        broken(first["quic:recovery_metrics_updated"], lambda e: e["data"].update(congestion_windw=1)),
        broken(first["quic:connection_id_updated"], lambda e: e["data"].update(initiator="peer")),
        broken(first["quic:connection_id_updated"], lambda e: e["data"].update(new="XYZ")),
        broken(first["quic:connection_id_updated"], lambda e: e.pop("tuple")),
        broken(first["quic:stream_state_updated"], lambda e: e["data"].update(new="opened")),
        broken(first["quic:stream_state_updated"], lambda e: e["data"].pop("stream_id")),
        broken(first["quic:recovery_metrics_updated"], lambda e: e["data"].update(smoothed_rtt="5")),
        broken(first["quic:parameters_set"], lambda e: e["data"].update(initiator="peer")),
        broken(first["quic:tuple_assigned"], lambda e: e["data"]["tuple_local"].update(port_v4=70000)),
        broken(first["quic:connection_closed"], lambda e: e["data"].update(trigger="clean")),
        broken(first["quic:connection_closed"], lambda e: e["data"].update(initiator="peer")),
    ]
    for e in bad_events:
        assert errors(EVENT, e), e
    # The originals are fine: the mutations are what fails.
    assert errors(HEADER, header) == [] and all(errors(EVENT, e) == [] for e in first.values())
    # And the framing: a file without RS, or a record without its newline.
    with pytest.raises(AssertionError):
        qvis_records(json.dumps(header) + "\n")
    with pytest.raises(AssertionError):
        qvis_records("\x1e" + json.dumps(header) + "\x1e{}\n")
