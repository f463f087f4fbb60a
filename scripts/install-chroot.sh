#!/usr/bin/env bash
# Runs install.sh for real in a Debian 12 chroot built with debootstrap: a first install, a re-run
# (the upgrade path) and `quoting doctor`, with their wall times; then starts the server and asks /healthz.
# Needs root, debootstrap, and network access to the Debian mirror and the npm registry.
# Not part of `npm test`: run it with `npm run test:install-chroot` (KEEP=1 keeps the chroot).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${QUOTING_CHROOT_CACHE:-/var/tmp/quoting-chroot-cache}
suite=bookworm

[ "$(id -u)" = 0 ] || { echo "install-chroot: needs root (debootstrap, chroot, mounts)" >&2; exit 1; }
command -v debootstrap > /dev/null || { echo "install-chroot: needs debootstrap (apt-get install -y debootstrap)" >&2; exit 1; }

# The mirror apt uses here.
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n 1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}

base="$cache/$suite"
if [ ! -x "$base/bin/bash" ]; then
  echo "==> debootstrap $suite from $mirror (cached in $base)"
  rm -rf "$base"
  mkdir -p "$cache"
  start=$(date +%s)
  debootstrap --variant=minbase --include=ca-certificates "$suite" "$base" "$mirror" > "$cache/debootstrap.log" 2>&1 ||
    { tail -n 20 "$cache/debootstrap.log" >&2; exit 1; }
  echo "    $(($(date +%s) - start)) s"
fi

jail=$(mktemp -d /var/tmp/quoting-chroot-XXXXXX)
mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2> /dev/null || true; done
  if [ -n "${server_pid:-}" ]; then kill "$server_pid" 2> /dev/null || true; fi
  if [ "${KEEP:-0}" = 1 ]; then
    echo "kept the chroot in $jail"
  elif grep -q " $jail/" /proc/mounts; then
    echo "install-chroot: something is still mounted under $jail; not removing it" >&2
  else
    rm -rf "$jail"
  fi
}
trap cleanup EXIT

echo "==> preparing $jail"
cp -a "$base/." "$jail/"
for fs in proc sys dev dev/pts; do
  mkdir -p "$jail/$fs"
  case "$fs" in
    proc) mount -t proc proc "$jail/proc" ;;
    sys) mount --rbind /sys "$jail/sys" ;;
    dev) mount --rbind /dev "$jail/dev" ;;
    dev/pts) continue ;;
  esac
  mounted+=("$jail/$fs")
done
cp /etc/resolv.conf "$jail/etc/resolv.conf"

# Where outbound TLS goes through a proxy with its own CA (NODE_EXTRA_CA_CERTS on this machine), the chroot trusts it too.
extra_ca=()
if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
  install -m 0644 "$NODE_EXTRA_CA_CERTS" "$jail/usr/local/share/ca-certificates/host-extra.crt"
  chroot "$jail" update-ca-certificates > /dev/null 2>&1 || true
  extra_ca=(NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt)
  echo "    trusting this machine's extra CA ($NODE_EXTRA_CA_CERTS)"
fi

# Node.js is copied in from this machine (Debian 12's own nodejs is 18, older than the 20.19 needed).
node_bin=$(command -v node)
node_prefix=$(cd "$(dirname "$(readlink -f "$node_bin")")/.." && pwd)
install -m 0755 "$(readlink -f "$node_bin")" "$jail/usr/bin/node"
mkdir -p "$jail/usr/lib/node_modules"
cp -a "$node_prefix/lib/node_modules/npm" "$jail/usr/lib/node_modules/npm"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$jail/usr/bin/npm"
echo "    node $(chroot "$jail" /usr/bin/node --version), npm $(chroot "$jail" /usr/bin/npm --version 2> /dev/null)"

# The source as it is in the working tree (committed or not), without build output.
mkdir -p "$jail/root/quoting"
tar -C "$repo" --exclude=./node_modules --exclude=./dist --exclude=./.git --exclude=./data -cf - . | tar -C "$jail/root/quoting" -xf -

in_jail() { chroot "$jail" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "${extra_ca[@]}" "$@"; }

timed() {
  local label=$1 start end status=0
  shift
  start=$(date +%s.%N)
  "$@" || status=$?
  end=$(date +%s.%N)
  printf '    %s: %.1f s (exit %s)\n' "$label" "$(echo "$end - $start" | bc 2> /dev/null || awk "BEGIN {print $end - $start}")" "$status" | tee -a "$jail/times"
  return "$status"
}

echo "==> first install"
timed "first install" in_jail bash /root/quoting/install.sh --url https://quotes.example.com
echo "==> re-run (upgrade in place, same source)"
secrets_before=$(grep -E '^(MIGRATE_TOKEN|ADMIN_API_KEY)=' "$jail/etc/quoting/quoting.env")
timed "re-run" in_jail bash /root/quoting/install.sh
[ "$secrets_before" = "$(grep -E '^(MIGRATE_TOKEN|ADMIN_API_KEY)=' "$jail/etc/quoting/quoting.env")" ] || { echo "secrets changed on re-run" >&2; exit 1; }
echo "    secrets unchanged"
echo "==> quoting doctor"
timed "quoting doctor" in_jail /usr/local/bin/quoting doctor
echo "==> quoting serve (as systemd would: the quoting user, the env file) and /healthz"
# chroot execs env, which execs runuser: $! is runuser, which passes SIGTERM on to the server.
chroot "$jail" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
  runuser -u quoting -- env QUOTING_ENV_FILE=/etc/quoting/quoting.env /usr/bin/node /opt/quoting/bin/quoting serve > "$jail/serve.log" 2>&1 &
server_pid=$!
port=$(sed -n 's/^PORT=//p' "$jail/etc/quoting/quoting.env")
for _ in $(seq 1 120); do
  kill -0 "$server_pid" 2> /dev/null || { echo "    the server exited:" >&2; tail -n 5 "$jail/serve.log" >&2; exit 1; }
  if node -e "fetch('http://127.0.0.1:$port/healthz').then(async (r) => { console.log('    /healthz', r.status, await r.text()); process.exit(r.ok ? 0 : 1) }, () => process.exit(1))"; then break; fi
  sleep 1
done
kill "$server_pid"
wait "$server_pid" 2> /dev/null || true
server_pid=
echo "==> times"
cat "$jail/times"
