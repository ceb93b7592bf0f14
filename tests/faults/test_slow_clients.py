"""Issue 25, item 3: slow clients cannot stall the site. gunicorn started as ``./planner.sh`` starts it
(``-c planner/gunicorn_conf.py``), with one worker of two threads and 2-second bounds so that a small
slowloris (six sockets) is more than it has threads:

- sockets that trickle their headers byte by byte are cut at the head's deadline, and a normal
  request meanwhile is answered (before: every worker was held, a normal request waited 33 s);
- an upload that stops short of its Content-Length is a 400 with a JSON message after the body's
  idle limit (before: a worker pinned for 30 s, then a 500), and nothing is stored.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.faults.test_planner_sh import free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]
BOUND = 2.0  # PLANNER_HEADER_TIMEOUT_SECONDS and PLANNER_BODY_TIMEOUT_SECONDS for this server


def manage(env: dict, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    var = tmp_path_factory.mktemp("slow-clients")
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DEBUG", "PLANNER_BROKER_DIR")}
    env.update(
        DATABASE_URL=f"sqlite:///{var / 'db.sqlite3'}",
        PLANNER_VAR_DIR=str(var),
        DEBUG="0",
        PLANNER_SECURE_COOKIES="0",
        PLANNER_HSTS_SECONDS="0",
        ALLOWED_HOSTS="127.0.0.1",
        PLANNER_HEADER_TIMEOUT_SECONDS=str(BOUND),
        PLANNER_BODY_TIMEOUT_SECONDS=str(BOUND),
        PLANNER_WEB_WORKERS="1",
        PLANNER_WEB_THREADS="2",
    )
    manage(env, "migrate", "-v0")
    token = manage(
        env,
        "shell",
        "-c",
        "from django.contrib.auth.models import Group, User; "
        "from rest_framework.authtoken.models import Token; "
        "user = User.objects.create_user('uploader', password='not-used'); "
        "user.groups.add(Group.objects.get(name='admin')); "
        "print(Token.objects.create(user=user).key)",
    ).split()[-1]
    port = free_port()
    process = subprocess.Popen(
        [str(ROOT / ".venv/bin/gunicorn"), "planner.wsgi", "-c", "planner/gunicorn_conf.py",
         "--bind", f"127.0.0.1:{port}", "--log-level", "warning"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    output: list[str] = []
    threading.Thread(target=lambda: output.extend(process.stdout), daemon=True).start()
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            return urllib.request.urlopen(f"{url}/login/", timeout=5).status == 200
        except OSError:
            return False

    try:
        wait_for(lambda: answers() or process.poll() is not None, 120, "gunicorn to serve")
        assert process.poll() is None, "".join(output)
        yield url, port, token, var, output
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def read_response(sock: socket.socket, seconds: float) -> bytes:
    sock.settimeout(seconds)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
            if b"\r\n\r\n" in data:
                head, _, body = data.partition(b"\r\n\r\n")
                lengths = [
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                ]
                length = lengths[0] if lengths else None
                if length is not None and len(body) >= length:
                    break
    except TimeoutError:
        pass
    return data


def test_trickled_headers_are_cut_and_a_normal_request_is_answered_meanwhile(server):
    url, port, _, _, _ = server
    stop = threading.Event()
    closed_after: list[float] = []

    def slowloris() -> None:
        sock = socket.create_connection(("127.0.0.1", port))
        start = time.monotonic()
        sock.sendall(b"GET /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        try:
            while not stop.is_set():
                sock.sendall(b"X")  # a byte of a header every 0.2 s: never idle, never done
                time.sleep(0.2)
        except OSError:  # the server cut it
            closed_after.append(time.monotonic() - start)
        finally:
            sock.close()

    attackers = [threading.Thread(target=slowloris, daemon=True) for _ in range(6)]
    for attacker in attackers:
        attacker.start()
    time.sleep(0.5)  # both threads of the one worker are now reading trickling headers
    start = time.monotonic()
    with urllib.request.urlopen(f"{url}/login/", timeout=30) as response:
        assert response.status == 200
    waited = time.monotonic() - start
    # Answered once a thread is free: at most about one head deadline per pair of attackers ahead.
    assert waited < 4 * BOUND + 2, waited
    time.sleep(BOUND * 3 + 1)
    stop.set()
    for attacker in attackers:
        attacker.join(10)
    assert len(closed_after) == 6, closed_after  # every one cut by the server, none left holding
    assert all(after < 4 * BOUND + 2 for after in closed_after), closed_after


def test_an_upload_shorter_than_its_content_length_is_a_400_and_stores_nothing(server):
    url, port, token, var, output = server
    body = b"job_id,submit_time,share,duration\nj1,0,QS1,100\n"
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(
        b"POST /api/traces/?name=short HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/csv\r\n"
        + f"Authorization: Token {token}\r\nContent-Length: {len(body) + 100_000}\r\n\r\n".encode()
        + body
    )
    start = time.monotonic()
    response = read_response(sock, 30)
    waited = time.monotonic() - start
    sock.close()
    head, _, content = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), response[:500]
    assert json.loads(content) == {
        "detail": "the request body stopped arriving for 2 s (PLANNER_BODY_TIMEOUT_SECONDS) "
        f"before the {len(body) + 100_000:,} bytes its Content-Length announced"
    }
    assert BOUND - 0.5 < waited < BOUND + 5, waited
    with urllib.request.urlopen(
        urllib.request.Request(f"{url}/api/traces/", headers={"Authorization": f"Token {token}"}), timeout=10
    ) as listing:
        assert json.loads(listing.read())["count"] == 0  # nothing half-stored
    assert "Traceback" not in "".join(output)


def test_an_upload_cut_off_before_its_content_length_is_a_400(server):
    """The client closes its side early: the server sees the end of the body, short."""
    url, port, token, _, _ = server
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(
        b"POST /api/traces/?name=cut HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/csv\r\n"
        + f"Authorization: Token {token}\r\nContent-Length: 5000\r\n\r\n".encode()
        + b"job_id,submit_time,share,duration\n"
    )
    sock.shutdown(socket.SHUT_WR)
    response = read_response(sock, 30)
    sock.close()
    assert response.startswith(b"HTTP/1.1 400"), response[:500]
    assert b"short of its Content-Length" in response
