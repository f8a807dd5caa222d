#!/bin/sh
# Trims a Debian root file system after its packages are installed: the packages named in
# purge.txt go (dpkg --force-depends: what pulled them in still works without them), and so do the
# Python packages' tests folders. __pycache__ stays: the root is read-only at run time, and without
# it every sandbox would compile its imports again. Then the image's user, uid 1000, and /data.
# Usage: rootfs-hook.sh ROOT PURGE_LIST   (mmdebstrap's customize hook; Containerfile with ROOT=/)
set -eu
root=$1
purge=$2
if [ "$root" = / ]; then in_root=''; else in_root="chroot $root"; fi
packages=$(grep -v '^#' "$purge" | tr '\n' ' ')
installed=$($in_root dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' | awk '$1 == "ii" { print $2 }')
present=''
for name in $packages; do
  if printf '%s\n' "$installed" | grep -qx "$name"; then present="$present $name"; fi
done
# shellcheck disable=SC2086
[ -z "$present" ] || $in_root dpkg --purge --force-depends $present >/dev/null
[ ! -d "$root/usr/lib/python3/dist-packages" ] || find "$root/usr/lib/python3/dist-packages" -type d -name tests -prune -exec rm -rf {} +
# Under SOURCE_DATE_EPOCH, py_compile writes checked-hash .pyc files: every import then reads its
# source again and hashes it (17 MB for pandas and pyplot, 5,000 system calls and about 7% of a
# kernel's start). The root is read-only, its sources never change: mark them unchecked (PEP 552:
# flags bit 1 off; the hash stays), as Debian's host install (timestamp .pyc) costs nothing either.
if [ -x "$root/usr/bin/python3" ]; then
  $in_root python3 -I -c '
import glob
for path in glob.iglob("/usr/lib/python3*/**/__pycache__/*.pyc", recursive=True):
    with open(path, "r+b") as pyc:
        pyc.seek(4)
        if pyc.read(4) == b"\x03\0\0\0":
            pyc.seek(4)
            pyc.write(b"\x01\0\0\0")
'
fi
if ! grep -q '^analyst:' "$root/etc/passwd"; then
  echo 'analyst:x:1000:1000:Analyst:/data:/usr/sbin/nologin' >>"$root/etc/passwd"
  echo 'analyst:x:1000:' >>"$root/etc/group"
fi
mkdir -p "$root/data"
chown 1000:1000 "$root/data"
chmod 0755 "$root/data"
# analyst-postgres: the data folder where the postgres image from Docker Hub has it.
if [ -d "$root/usr/lib/postgresql" ]; then
  mkdir -p "$root/var/lib/postgresql/data"
  $in_root chown postgres:postgres /var/lib/postgresql/data
  chmod 0700 "$root/var/lib/postgresql/data"
fi
# Files that differ between two builds of the same packages: logs, backups of dpkg's and
# debconf's databases, ldconfig's cache of inodes and mtimes, and apt's lock, which comes with
# the cached .debs (npm run image) and keeps the mtime of the build that first made it.
rm -f "$root"/var/cache/debconf/*-old "$root"/var/lib/dpkg/*-old "$root"/var/log/dpkg.log \
  "$root"/var/log/apt/* "$root"/var/log/alternatives.log "$root/etc/machine-id" \
  "$root/var/cache/ldconfig/aux-cache" "$root/var/cache/apt/archives/lock"
# Its partial folder too; touched, its mtime is the build's, which the tar clamps to the epoch.
[ ! -d "$root/var/cache/apt/archives/partial" ] || touch "$root/var/cache/apt/archives/partial"
# mmdebstrap copies in the builder's resolv.conf and hostname, which differ between hosts; the
# container runtime mounts its own over both (and in a Containerfile's RUN they are its mounts).
[ "$root" = / ] || rm -f "$root/etc/resolv.conf" "$root/etc/hostname"
