"""Starts one sandbox from the template (analyst_zygote.py); run by the host as root, per sandbox.

Usage: python3 -I -S analyst_launcher.py SOCKET CONFIG_JSON, with the kernel's pipes on fds 1-4
and bubblewrap's info fd on 5. The kernel's environment is this process's own. Exits with the
sandbox's status, so the host sees it as it sees bubblewrap's.
"""

import ctypes
import json
import os
import signal
import socket
import struct
import sys

libc = ctypes.CDLL(None, use_errno=True)
SYS_OPEN_TREE = 428
OPEN_TREE_CLONE = 1
AT_RECURSIVE = 0x8000
INFO_FD = 5


def clone_mount(path):
    """A detached copy of the mount at path: the jail attaches it in its own mount namespace."""
    fd = libc.syscall(SYS_OPEN_TREE, -100, path.encode(), OPEN_TREE_CLONE | os.O_CLOEXEC | AT_RECURSIVE)
    if fd < 0:
        error = ctypes.get_errno()
        raise OSError(error, f'open_tree {path}: {os.strerror(error)}')
    return fd


def main():
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: the host's death ends the sandbox
    socket_path, raw = sys.argv[1], sys.argv[2]
    config = json.loads(raw)
    mounts = [clone_mount(config['work']), clone_mount(config['data'])]
    request = json.dumps(
        {
            'uid': config['uid'],
            'gid': config['gid'],
            'tmpBytes': config['tmpBytes'],
            'env': dict(os.environ),
            'kernel': config['kernel'],
        }
    ).encode()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    conn.connect(socket_path)
    conn.sendall(struct.pack('!I', len(request)))
    socket.send_fds(conn, [request], [1, 2, 3, 4, *mounts])
    for fd in mounts:
        os.close(fd)
    # The jail's init sends one byte with its credentials: the kernel gives its PID as we see it.
    _, ancillary, _, _ = conn.recvmsg(1, socket.CMSG_SPACE(12))
    pid = next(
        (struct.unpack('iII', data[:12])[0] for level, kind, data in ancillary if kind == socket.SCM_CREDENTIALS),
        None,
    )
    if not pid:
        sys.stderr.write('the sandbox template did not start a sandbox\n')
        sys.exit(1)
    for procs in config.get('cgroupProcs') or []:
        with open(procs, 'w') as f:
            f.write(str(pid))
    os.write(INFO_FD, json.dumps({'child-pid': pid}).encode())
    conn.sendall(b'g')
    status = b''
    while not status.endswith(b'\n'):
        chunk = conn.recv(64)
        if not chunk:
            sys.exit(1)
        status += chunk
    code = int(status.split()[1])
    sys.exit(code if code >= 0 else 128 - code)


if __name__ == '__main__':
    main()
