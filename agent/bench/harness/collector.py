# Written by the goalbox grader for one grade and removed after it; not part of the exercise.
#
# The collector is the grade's first process and the one the solution never runs in. It reads from its standard
# input, before anything of the exercise runs: a key (line 1), the epilogue's nonce (line 2) and the grade's two
# scripts (the test command, then the trailer, separated by a NUL byte). It makes itself undumpable, so that no
# process of the same user can read its memory or open its descriptors through /proc, and keeps the key to itself.
#
# The test command runs with the write end of a pipe as descriptor 3: the framework's per-test results (the
# harness's lines, libtest's log, cmd/go's JSON events) are written there as each test ends, and the collector
# reads them as they come, each line frozen when it is seen. When the test command has exited, the lines are done:
# what a process of the solution writes later (it may have kept a copy of the pipe) is not read. The trailer runs
# next, without the pipe. Last, the collector prints one record line: the lines in the order they came, the test
# command's exit status, and an HMAC-SHA256 of both under the key. A solution can print a line like it, but
# without the key it cannot make one that verifies.
import base64
import ctypes
import fcntl
import hashlib
import hmac
import json
import os
import select
import subprocess
import sys
import tempfile
import zlib


def main():
    data = sys.stdin.buffer.read()
    key, nonce, scripts = data.split(b"\n", 2)
    test_script, trailer_script = scripts.split(b"\0", 1)
    try:
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
    except (OSError, AttributeError):
        pass  # no prctl here (not Linux): the record's key still cannot be guessed

    folder = tempfile.mkdtemp()  # mode 0700
    with open(os.path.join(folder, "nonce"), "wb") as f:
        f.write(nonce)
    env = dict(os.environ, GOALBOX_DIR=folder)

    r0, w0 = os.pipe()
    r = fcntl.fcntl(r0, fcntl.F_DUPFD_CLOEXEC, 10)
    w = fcntl.fcntl(w0, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(r0)
    os.close(w0)
    os.dup2(w, 3, inheritable=True)
    os.close(w)
    sys.stdout.flush()
    child = subprocess.Popen(["sh", "-c", test_script], stdin=subprocess.DEVNULL, env=env, pass_fds=(3,))
    os.close(3)

    # One thread: wait for the pipe or the test command's end, whichever comes; nothing is read after that end.
    os.set_blocking(r, False)
    try:
        pidfd = os.pidfd_open(child.pid)
    except (AttributeError, OSError):
        pidfd = None
    data = bytearray()
    open_ = True

    def drain():
        while True:
            try:
                chunk = os.read(r, 65536)
            except BlockingIOError:
                return True
            if not chunk:
                return False
            data.extend(chunk)

    while child.poll() is None:
        fds = [r] if open_ else []
        if pidfd is not None:
            fds.append(pidfd)
        ready, _, _ = select.select(fds, [], [], None if pidfd is not None else 0.05)
        if r in ready:
            open_ = drain()
    code = child.returncode if child.returncode >= 0 else 128 - child.returncode  # killed: as a shell says it
    if open_:
        drain()  # written before the test command exited, not read yet
    lines = [line.decode("utf-8", "replace") for line in bytes(data).split(b"\n") if line]

    sys.stdout.flush()
    trailer = subprocess.run(["sh", "-c", trailer_script], stdin=subprocess.DEVNULL, env=dict(env, GOALBOX_CODE=str(code)))
    body = json.dumps({"code": code, "lines": lines}, separators=(",", ":")).encode()
    body = base64.b64encode(zlib.compress(body)).decode()
    mac = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
    sys.stdout.write("\n@@goalbox-record %s %s\n" % (body, mac))
    sys.stdout.flush()
    sys.exit(code if trailer.returncode == 0 else trailer.returncode)


main()
