import os
import pathlib
import socket
import subprocess
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def _server_binary():
    """The mpquic-server binary: $MPQUIC_SERVER, else the cargo target directory's."""
    env = os.environ.get("MPQUIC_SERVER")
    if env:
        return pathlib.Path(env)
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR",
                                         pathlib.Path.home() / ".cache/mpquic/target"))
    for profile in ("release", "debug"):
        p = target / profile / "mpquic-server"
        if p.is_file():
            return p
    return None


def _free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_server(binary, root):
    """mpquic-server serving `root` on a free port of 127.0.0.1: (process, port)."""
    port = _free_udp_port()
    certs = REPO / "tests" / "certs"
    proc = subprocess.Popen(
        [str(binary), "--listen", f"127.0.0.1:{port}", "--root", str(root),
         "--cert", str(certs / "cert.pem"), "--key", str(certs / "key.pem")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(0.5)
    if proc.poll() is not None:
        err = proc.stderr.read().decode(errors="replace")
        pytest.fail(f"mpquic-server exited at start: {err}")
    return proc, port


def stop_server(proc):
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


BLOB = bytes((i * 7919 + (i >> 8)) & 0xFF for i in range(1_500_000))


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """A local mpquic-server serving a directory with `blob.bin` (1.5 MB)."""
    binary = _server_binary()
    if binary is None:
        pytest.skip("mpquic-server is not built (cargo build --release -p mpquic-apps); "
                    "or set MPQUIC_SERVER=/path/to/mpquic-server")
    root = tmp_path_factory.mktemp("www")
    (root / "blob.bin").write_bytes(BLOB)
    proc, port = start_server(binary, root)
    yield {"url": f"https://127.0.0.1:{port}", "blob": BLOB, "port": port}
    stop_server(proc)
