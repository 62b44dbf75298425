"""Client programs that attack the client mode rather than fail a requirement (the client-side
twin of tests/shared/hostile.py): each writes or sends far more, far slower or far longer than a
client should, the way its name says. Run by tests/client_mode/test_client_hostile.py."""

from __future__ import annotations

PREAMBLE = """
import os, socket, sys, time, urllib.parse
base = urllib.parse.urlsplit(os.environ["PETSTORE_BASE_URL"])
key = os.environ["PETSTORE_API_KEY"]

def connect():
    return socket.create_connection((base.hostname, base.port), timeout=60)

def head(method, extra=""):
    return (
        f"{method} {base.path}/categories HTTP/1.1\\r\\nHost: {base.netloc}\\r\\n"
        f"Authorization: Bearer {key}\\r\\n{extra}\\r\\n"
    ).encode()

def answer(sock):
    received = b""
    while b"\\r\\n\\r\\n" not in received:
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return received.split(b"\\r\\n", 1)[0].decode("latin-1")
"""

# 1 GiB on stdout and 1 GiB on stderr, each ending with a marker and the key (which must come out
# redacted); no request.
FLOODS_ITS_OUTPUT = (
    PREAMBLE
    + """
block = b"x" * (1 << 20)
for stream in (sys.stdout.buffer, sys.stderr.buffer):
    for _ in range(1024):
        stream.write(block)
    stream.write(f"\\nthe end of {stream.name} {key}\\n".encode())
    stream.flush()
"""
)

# A POST whose chunked body would be 2 GiB, sent until the server answers or closes.
SENDS_A_HUGE_BODY = (
    PREAMBLE
    + """
sock = connect()
sock.sendall(head("POST", "Content-Type: application/json\\r\\nTransfer-Encoding: chunked\\r\\n"))
chunk = b"100000\\r\\n" + b" " * (1 << 20) + b"\\r\\n"  # 1 MiB of JSON whitespace
try:
    for _ in range(2048):
        sock.sendall(chunk)
    sock.sendall(b"0\\r\\n\\r\\n")
except OSError as error:
    print("the server stopped reading:", error)
print(answer(sock))
"""
)

# A GET whose head would hold a 64 MiB header, sent until the server answers or closes.
SENDS_A_HUGE_HEAD = (
    PREAMBLE
    + """
sock = connect()
sock.sendall(head("GET", "X-Huge: ").removesuffix(b"\\r\\n"))
try:
    for _ in range(1024):
        sock.sendall(b"h" * 65536)
    sock.sendall(b"\\r\\n\\r\\n")
except OSError as error:
    print("the server stopped reading:", error)
try:
    print(answer(sock))
except OSError as error:
    print("no answer:", error)
"""
)

# In `success`, the request's head a byte a second; in `create`, the head at once and the
# body a byte a second.
TRICKLES = (
    PREAMBLE
    + """
sock = connect()
body = b'{"name": "client-check"}'
if os.environ["PETSTORE_OPERATION"] == "createCategory":
    extra = f"Content-Type: application/json\\r\\nContent-Length: {len(body)}\\r\\n"
    sock.sendall(head("POST", extra))
    trickled = body
else:
    trickled = head("GET")
for byte in trickled:
    try:
        sock.sendall(bytes([byte]))
    except OSError as error:
        print("the server stopped reading:", error)
        break
    time.sleep(1)
print(answer(sock))
"""
)

# Leaves processes that a kill of its process group misses: a daemon (fork, setsid, fork: a
# session of its own, its parent gone) and a child in a session of its own, whose pids it writes
# to $PID_FOLDER; then sends its operation's request. In `success` it exits 0; in `create` it
# stays until it is stopped.
LEAVES_PROCESSES = (
    PREAMBLE
    + """
import subprocess
folder, scenario = os.environ["PID_FOLDER"], os.environ["PETSTORE_SCENARIO"]

def note(name, pid):
    path = os.path.join(folder, f"{scenario}-{name}.pid")
    open(path + ".tmp", "w").write(str(pid))
    os.replace(path + ".tmp", path)

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        note("daemon", os.getpid())
        time.sleep(300)
    os._exit(0)
os.wait()
sleeper = [sys.executable, "-c", "import time; time.sleep(300)"]
note("child", subprocess.Popen(sleeper, start_new_session=True).pid)
while not os.path.exists(os.path.join(folder, f"{scenario}-daemon.pid")):
    time.sleep(0.01)
sock = connect()
if os.environ["PETSTORE_OPERATION"] == "createCategory":
    body = b'{"name": "client-check"}'
    extra = f"Content-Type: application/json\\r\\nContent-Length: {len(body)}\\r\\n"
    sock.sendall(head("POST", extra) + body)
    print(answer(sock))
    time.sleep(300)
sock.sendall(head("GET"))
print(answer(sock))
"""
)

# Its request again and again on one connection, as fast as the server answers, for ever.
FLOODS_REQUESTS = (
    PREAMBLE
    + """
sock = connect()
while True:
    sock.sendall(head("GET"))
    received = b""
    while b"\\r\\n\\r\\n" not in received or not received.rstrip().endswith(b"}"):
        chunk = sock.recv(65536)
        if not chunk:
            sys.exit("the server closed the connection")
        received += chunk
"""
)

# Its request pipelined: hundreds in each write, on one connection, for ever, the answers read
# and thrown away on a thread of their own, so the server is never held back by its writes.
PIPELINES_REQUESTS = (
    PREAMBLE
    + """
import threading
sock = connect()

def drain():
    while sock.recv(1 << 20):
        pass

threading.Thread(target=drain, daemon=True).start()
block = head("GET") * 500
while True:
    try:
        sock.sendall(block)
    except OSError:
        sys.exit("the server closed the connection")
"""
)
