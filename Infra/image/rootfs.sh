#!/usr/bin/env bash
# Assembles a minimal root filesystem for one executable: the binary (stripped) at
# /usr/local/bin/NAME, exactly the shared libraries it loads (found with ldd; the Swift runtime is
# linked in statically, and so is BoringSSL, for TLS and signatures), CA certificates, the IANA time
# zone database (users' quiet hours: its zone files only, without the posix/ and right/ copies, the
# source text tzdata.zi and the tables), a non-root user and /tmp. The image is this folder on
# `FROM scratch`: nothing else is in it, not even a shell.
# Usage: rootfs.sh BINARY OUT_DIR [NAME [MORE_BINARY ...]]   (NAME defaults to the binary's own name)
# MORE_BINARY: executables installed beside it under their own names (the herald image carries the
# function executables, which `herald dev` starts).
set -euo pipefail
binary=${1:?usage: rootfs.sh BINARY OUT_DIR [NAME [MORE_BINARY ...]]}
out=${2:?usage: rootfs.sh BINARY OUT_DIR [NAME [MORE_BINARY ...]]}
name=${3:-$(basename "$binary")}
shift $(($# < 3 ? $# : 3))
rm -rf "$out"
mkdir -p "$out/usr/local/bin" "$out/etc/ssl/certs" "$out/tmp"
chmod 1777 "$out/tmp"
install_binary() {
  cp "$1" "$out/usr/local/bin/$2"
  # Symbols are for debuggers, not for running.
  strip "$out/usr/local/bin/$2"
  ldd "$1" | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }' | sort -u | while read -r library; do
    real=$(readlink -f "$library")
    mkdir -p "$out$(dirname "$library")"
    cp "$real" "$out$library"
  done
}
install_binary "$binary" "$name"
for more in "$@"; do install_binary "$more" "$(basename "$more")"; done
cp /etc/ssl/certs/ca-certificates.crt "$out/etc/ssl/certs/ca-certificates.crt"
[ -e /usr/share/zoneinfo/Europe/Berlin ] || { echo "error: no time zone database (apt-get install tzdata)" >&2; exit 1; }
mkdir -p "$out/usr/share/zoneinfo"
tar -C /usr/share/zoneinfo --exclude=./posix --exclude=./right --exclude=./posixrules --exclude=./localtime --exclude='*.zi' \
  --exclude='*.tab' --exclude='leap*' -cf - . | tar -C "$out/usr/share/zoneinfo" -xf -
printf 'root:x:0:0:root:/root:/sbin/nologin\nherald:x:10001:10001:herald:/tmp:/sbin/nologin\n' >"$out/etc/passwd"
printf 'root:x:0:\nherald:x:10001:\n' >"$out/etc/group"
