"""Starts one sandbox from the template (analyst_zygote.py); run by the host as root, per sandbox.

Usage: python3 -I -S analyst_launcher.py SOCKET WORK DATA CGROUP_PROCS REQUEST, with the kernel's
pipes on fds 1-4 and bubblewrap's info fd on 5. CGROUP_PROCS is newline-separated; REQUEST is the
template's JSON, to which the kernel's environment (this process's own) is appended. Exits with
the sandbox's status, so the host sees it as it sees bubblewrap's. It imports as little as it
can (no json, no socket module): it is started for every sandbox.
"""

import _socket
import array
import ctypes
import os
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
    libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG SIGKILL: the host's death ends the sandbox
    socket_path, work, data, cgroup_procs, request = sys.argv[1:6]
    mounts = [clone_mount(work), clone_mount(data)]
    env = b'\0'.join(key + b'=' + value for key, value in os.environb.items())
    message = request.encode() + b'\0' + env
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    conn.setsockopt(_socket.SOL_SOCKET, _socket.SO_PASSCRED, 1)
    conn.connect(socket_path)
    conn.sendall(len(message).to_bytes(4, 'big'))
    fds = array.array('i', [1, 2, 3, 4, *mounts])
    conn.sendmsg([message], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds.tobytes())])
    for fd in mounts:
        os.close(fd)
    # The jail's init sends one byte with its credentials: the kernel gives its PID as we see it.
    _, ancillary, _, _ = conn.recvmsg(1, _socket.CMSG_SPACE(12))
    pid = next(
        (int.from_bytes(data[:4], sys.byteorder) for _, kind, data in ancillary if kind == _socket.SCM_CREDENTIALS),
        None,
    )
    if not pid:
        sys.stderr.write('the sandbox template did not start a sandbox\n')
        sys.exit(1)
    for procs in filter(None, cgroup_procs.split('\n')):
        with open(procs, 'w') as f:
            f.write(str(pid))
    os.write(INFO_FD, b'{"child-pid": %d}' % pid)
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
