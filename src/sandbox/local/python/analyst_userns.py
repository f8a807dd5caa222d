"""Runs a command without the host's privileges: as root of a user namespace of its own, whose uid
and gid maps the host writes (how a template's zygote, analyst_zygote.py, runs), or as a plain
uid (how bubblewrap runs for a template's sandboxes and probes). Either way, a template kept in a
folder closed to other users (root's /root/.analyst, /root being 0700) can first be bound where
the command, no longer root, reaches it.

Usage, as root on the host:
    python3 -I -S analyst_userns.py [--reach FOLDER AT] MAP COMMAND...
    python3 -I -S analyst_userns.py [--reach FOLDER AT] --user UID:GID COMMAND...
MAP is the maps' lines ("inside outside count"), joined by commas, the same for uids and gids.

--reach binds FOLDER (the template's folder) at AT, read-only, nosuid and nodev, in a mount
namespace of this command's own, made while it is still root: on the host, AT stays an empty
folder, and nothing of the closed folder but FOLDER is bound. bubblewrap then binds the
template's /usr (and the rest) from AT. bubblewrap's own --ro-bind-fd cannot do this: it resolves
the fd back to its path, and is refused at the closed folder.

A process cannot write a map of more than its own uid into its own namespace: this process, as root
on the host, forks the child that makes the namespace, writes the child's maps from outside, and
waits for it. The child then takes uid 0 of the namespace (an unprivileged uid on the host: every
host capability goes, those of the namespace stay) and runs the command (bubblewrap). Its mount
namespace has a /run/user of its own, where bubblewrap makes its folders: nothing is written on
the host. Killing this process, or the host's, kills the child (PR_SET_PDEATHSIG). With --user,
this process becomes the uid and runs the command in its place (bubblewrap's --die-with-parent
ends it with the host).
"""

import ctypes
import os
import signal
import sys

CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1

libc = ctypes.CDLL(None, use_errno=True)


def check(result, what):
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, f'{what}: {os.strerror(error)}')


def encoded(text):
    return None if text is None else text.encode()


def mount(source, target, kind, flags, data=None):
    return libc.mount(encoded(source), encoded(target), encoded(kind), ctypes.c_ulong(flags), encoded(data))


def reach(folder, at):
    """FOLDER bound read-only at AT, in a mount namespace of this process's own (as root)."""
    check(libc.unshare(CLONE_NEWNS), 'unshare mount namespace')
    check(mount(None, '/', None, MS_REC | MS_PRIVATE), 'mount --make-rprivate /')
    # Not recursive: mounts below FOLDER (none in a built template) stay out.
    check(mount(folder, at, None, MS_BIND), f'bind {folder} at {at}')
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
    check(mount(None, at, None, flags), f'remount {at} read-only')


def execute(command):
    program = command[0]
    if '/' not in program:  # execvp's search imports modules that -S leaves out
        folders = os.environ.get('PATH', '/usr/bin:/bin').split(':')
        program = next((f'{d}/{program}' for d in folders if os.access(f'{d}/{program}', os.X_OK)), program)
    os.execv(program, command)


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
    check(mount(None, '/', None, MS_REC | MS_PRIVATE), 'mount --make-rprivate /')
    check(mount('tmpfs', '/run/user', 'tmpfs', MS_NOSUID | MS_NODEV, 'mode=0755'), 'mount /run/user')
    execute(command)


def as_user(ids, command):
    uid, gid = (int(part) for part in ids.split(':'))
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    execute(command)


def in_user_namespace(maps, command):
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
                    f.write(maps.replace(',', '\n') + '\n')
            os.write(go_write, b'g')
        except OSError as error:
            os.write(2, f'user namespace: {error}\n'.encode())
    os.close(go_write)
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, lambda signum, _: os.kill(pid, signal.SIGKILL))
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    sys.exit(code if code >= 0 else 128 - code)


def main():
    check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), 'prctl')  # the host's death ends it
    if os.getppid() == 1:
        sys.exit(70)  # the host died already
    args = sys.argv[1:]
    try:
        if args[0] == '--reach':
            reach(args[1], args[2])
            args = args[3:]
    except OSError as error:
        os.write(2, f'template folder: {error}\n'.encode())
        sys.exit(72)
    if args[0] == '--user':
        as_user(args[1], args[2:])
    else:
        in_user_namespace(args[0], args[1:])


if __name__ == '__main__':
    main()
