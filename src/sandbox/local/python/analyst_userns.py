"""Runs a command as root of a user namespace of its own, whose uid and gid maps the host writes:
how a template's zygote (analyst_zygote.py) runs without the host's privileges.

Usage, as root on the host: python3 -I -S analyst_userns.py MAP COMMAND...
MAP is the maps' lines ("inside outside count"), joined by commas, the same for uids and gids.

A process cannot write a map of more than its own uid into its own namespace: this process, as root
on the host, forks the child that makes the namespace, writes the child's maps from outside, and
waits for it. The child then takes uid 0 of the namespace (an unprivileged uid on the host: every
host capability goes, those of the namespace stay) and runs the command (bubblewrap). Its mount
namespace has a /run/user of its own, where bubblewrap makes its folders: nothing is written on
the host. Killing this process, or the host's, kills the child (PR_SET_PDEATHSIG).
"""

import ctypes
import os
import signal
import sys

CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000
MS_NOSUID = 2
MS_NODEV = 4
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1

libc = ctypes.CDLL(None, use_errno=True)


def check(result, what):
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, f'{what}: {os.strerror(error)}')


def child(ready, go, command):
    check(libc.unshare(CLONE_NEWUSER), 'unshare user namespace')
    os.write(ready, b'u')
    if os.read(go, 1) != b'g':
        os._exit(70)
    os.setgroups([])
    os.setresgid(0, 0, 0)
    os.setresuid(0, 0, 0)  # the namespace's root, mapped to an unprivileged host uid
    # A change of uid clears the parent-death signal: set after it, kept across exec.
    check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), 'prctl')
    if os.getppid() == 1:
        os._exit(70)
    check(libc.unshare(CLONE_NEWNS), 'unshare mount namespace')
    check(libc.mount(None, b'/', None, ctypes.c_ulong(MS_REC | MS_PRIVATE), None), 'mount --make-rprivate /')
    check(
        libc.mount(b'tmpfs', b'/run/user', b'tmpfs', ctypes.c_ulong(MS_NOSUID | MS_NODEV), b'mode=0755'),
        'mount /run/user',
    )
    program = command[0]
    if '/' not in program:  # execvp's search imports modules that -S leaves out
        folders = os.environ.get('PATH', '/usr/bin:/bin').split(':')
        program = next((f'{d}/{program}' for d in folders if os.access(f'{d}/{program}', os.X_OK)), program)
    os.execv(program, command)


def main():
    check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), 'prctl')  # the host's death ends it
    if os.getppid() == 1:
        sys.exit(70)  # the host died already
    maps = sys.argv[1].replace(',', '\n') + '\n'
    command = sys.argv[2:]
    ready_read, ready_write = os.pipe()
    go_read, go_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(ready_read)
            os.close(go_write)
            child(ready_write, go_read, command)
        except BaseException as error:
            os.write(2, f'user namespace: {error}\n'.encode())
        os._exit(71)
    os.close(ready_write)
    os.close(go_read)
    if os.read(ready_read, 1) == b'u':
        try:
            for name in ('uid_map', 'gid_map'):
                with open(f'/proc/{pid}/{name}', 'w') as f:
                    f.write(maps)
            os.write(go_write, b'g')
        except OSError as error:
            os.write(2, f'user namespace: {error}\n'.encode())
    os.close(go_write)
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, lambda signum, _: os.kill(pid, signal.SIGKILL))
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    sys.exit(code if code >= 0 else 128 - code)


if __name__ == '__main__':
    main()
