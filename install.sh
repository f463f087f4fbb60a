#!/usr/bin/env bash
# Installs (or upgrades, or removes) Quoting on a Debian or Ubuntu server. See "Install on a server" in README.md.
set -euo pipefail

readonly NODE_MIN_MAJOR=20 NODE_MIN_MINOR=19
readonly APP_USER=quoting
readonly PROGRAM_DIR=/opt/quoting CONFIG_DIR=/etc/quoting DATA_DIR=/var/lib/quoting
readonly ENV_FILE=/etc/quoting/quoting.env UNIT_DIR=/etc/systemd/system CRON_FILE=/etc/cron.d/quoting WRAPPER=/usr/local/bin/quoting

usage() {
  cat <<'EOF'
Usage: install.sh [options]

Installs Quoting on Debian 12+ or Ubuntu 22.04+ (run as root), or upgrades an existing install in
place (new code, migrate, restart; settings, data and secrets are kept). Ends by running `quoting doctor`.

Options:
  --url URL            public base URL (APP_URL), e.g. https://quotes.example.com (first install only)
  --port N             port `quoting serve` listens on, on 127.0.0.1 (first install only; default 3000)
  --with-postgres      install PostgreSQL from the distribution and create the quoting role and database
  --worker KIND        how `quoting worker` runs on PostgreSQL: timer (systemd, every minute; the default),
                       cron (every minute; the default without systemd) or watch (a `worker --watch` unit)
  --from TARBALL       install this source tarball (e.g. from `git archive`) instead of the tree install.sh is in
  --root DIR           write every file under DIR instead of /, start nothing (no root needed; for tests)
  --dry-run            print each step and change nothing
  --uninstall          remove the program, units and cron entry; keeps settings and data
  --purge              with --uninstall: also remove settings, data, the quoting user and the database
  -h, --help           show this help

Creates: the `quoting` system user, the program in /opt/quoting, settings in /etc/quoting/quoting.env
(generated MIGRATE_TOKEN and ADMIN_API_KEY, mode 0640, root:quoting), data in /var/lib/quoting,
quoting.service (`quoting serve`), on PostgreSQL the worker timer, cron entry or watch unit, and
/usr/local/bin/quoting (runs the CLI as the quoting user with these settings).
EOF
}

url='' port=3000 with_postgres=0 worker_kind='' from='' root='' dry_run=0 uninstall=0 purge=0

die() {
  echo "install.sh: $*" >&2
  exit 1
}

while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --url) url=${2:?--url needs a value}; shift ;;
    --url=*) url=${1#*=} ;;
    --port) port=${2:?--port needs a value}; shift ;;
    --port=*) port=${1#*=} ;;
    --with-postgres) with_postgres=1 ;;
    --worker) worker_kind=${2:?--worker needs a value}; shift ;;
    --worker=*) worker_kind=${1#*=} ;;
    --from) from=${2:?--from needs a value}; shift ;;
    --from=*) from=${1#*=} ;;
    --root) root=${2:?--root needs a value}; shift ;;
    --root=*) root=${1#*=} ;;
    --dry-run) dry_run=1 ;;
    --uninstall) uninstall=1 ;;
    --purge) purge=1 ;;
    *) echo "install.sh: unknown option $1 (see install.sh --help)" >&2; exit 2 ;;
  esac
  shift
done

case "$worker_kind" in '' | timer | cron | watch) ;; *) echo "install.sh: --worker expects timer, cron or watch" >&2; exit 2 ;; esac
if ! [[ "$port" =~ ^[0-9]{1,5}$ ]] || [ "$port" -gt 65535 ]; then
  echo "install.sh: --port expects a port number" >&2
  exit 2
fi
if [ -n "$url" ] && ! [[ "$url" =~ ^https?://[^/[:space:]]+(/[^[:space:]]*)?$ ]]; then
  echo "install.sh: --url expects an absolute http(s) URL such as https://quotes.example.com" >&2
  exit 2
fi
[ "$purge" = 0 ] || [ "$uninstall" = 1 ] || { echo "install.sh: --purge goes with --uninstall" >&2; exit 2; }

# In --root mode every path is under the staging root and nothing outside it is touched or started.
staged=0
if [ -n "$root" ]; then
  staged=1
  mkdir -p "$root"
  root=$(cd "$root" && pwd)
fi
readonly root staged dry_run

step() { echo "==> $*"; }
note() { echo "    $*"; }

# Runs a command that changes the system; --dry-run prints it instead.
run() {
  if [ "$dry_run" = 1 ]; then
    echo "    would run: $*"
    return 0
  fi
  "$@"
}

# Skipped in --root mode (system-wide effects: users, packages, services).
system() {
  if [ "$staged" = 1 ]; then
    echo "    skipped (--root): $*"
    return 0
  fi
  run "$@"
}

# Writes stdin to $root$1 with mode $2 and owner $3 (owner left alone in --root mode); unchanged files are not touched.
put_file() {
  local target="$root$1" mode=$2 owner=$3 content
  content=$(cat)
  if [ "$dry_run" = 1 ]; then
    echo "    would write $1 (mode $mode, $owner)"
    return 0
  fi
  mkdir -p "$(dirname "$target")"
  if [ -f "$target" ] && [ "$(cat "$target")" = "$content" ]; then
    note "$1 unchanged"
  else
    local tmp
    tmp=$(mktemp "$target.XXXXXX")
    printf '%s\n' "$content" > "$tmp"
    mv "$tmp" "$target"
    note "wrote $1"
  fi
  chmod "$mode" "$target"
  [ "$staged" = 1 ] || chown "$owner" "$target"
}

make_dir() {
  local target="$root$1" mode=$2 owner=$3
  if [ "$dry_run" = 1 ]; then
    echo "    would create $1 (mode $mode, $owner)"
    return 0
  fi
  mkdir -p "$target"
  chmod "$mode" "$target"
  [ "$staged" = 1 ] || chown "$owner" "$target"
}

random_hex() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

systemd_running() { [ "$staged" = 1 ] || [ -d /run/systemd/system ]; }

# The value of KEY in the env file (empty when absent).
env_value() {
  local file="$root$ENV_FILE"
  [ -f "$file" ] || return 0
  sed -n "s/^$1=//p" "$file" | tail -n 1
}

# Runs the installed CLI as the quoting user with the installed settings.
quoting() {
  system runuser -u "$APP_USER" -- env QUOTING_ENV_FILE="$ENV_FILE" "$node_bin" "$PROGRAM_DIR/bin/quoting" "$@"
}

check_os() {
  step "Checking the system"
  if [ "$staged" = 0 ] && [ "$(id -u)" != 0 ]; then
    die "run as root (sudo bash install.sh ...), or with --root DIR to stage the files"
  fi
  local id='' version=''
  if [ -r /etc/os-release ]; then
    # shellcheck disable=SC1091
    id=$(. /etc/os-release && echo "${ID:-}") version=$(. /etc/os-release && echo "${VERSION_ID:-}")
  fi
  case "$id" in
    debian | ubuntu) note "$id $version" ;;
    *)
      [ "$staged" = 1 ] || die "this installer supports Debian 12+ and Ubuntu 22.04+ (found ${id:-an unknown system})"
      note "${id:-unknown system} (--root: not checked)"
      ;;
  esac
}

node_ok() {
  local v
  v=$("$1" -p 'process.versions.node' 2>/dev/null) || return 1
  local major=${v%%.*} rest=${v#*.}
  local minor=${rest%%.*}
  [ "$major" -gt "$NODE_MIN_MAJOR" ] || { [ "$major" -eq "$NODE_MIN_MAJOR" ] && [ "$minor" -ge "$NODE_MIN_MINOR" ]; }
}

# apt-get install, after one apt-get update per run (a fresh server may have no package lists yet).
apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then
    run env DEBIAN_FRONTEND=noninteractive apt-get update -q
    apt_updated=1
  fi
  run env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"
}

# The distribution's nodejs version when it is new enough (the package lists refreshed first).
distro_node() {
  if [ "$dry_run" = 0 ] && apt-get update -q > /dev/null 2>&1; then apt_updated=1; fi
  local candidate
  candidate=$(apt-cache policy nodejs 2> /dev/null | sed -n 's/^ *Candidate: *//p')
  [ -n "$candidate" ] && [ "$candidate" != "(none)" ] && dpkg --compare-versions "$candidate" ge "$NODE_MIN_MAJOR.$NODE_MIN_MINOR" && echo "$candidate"
}

check_node() {
  step "Checking Node.js (>= $NODE_MIN_MAJOR.$NODE_MIN_MINOR)"
  node_bin=$(command -v node || true)
  if [ -n "$node_bin" ] && node_ok "$node_bin"; then
    note "node $("$node_bin" -p 'process.versions.node') at $node_bin"
  elif [ "$staged" = 0 ] && candidate=$(distro_node); then
    note "installing the distribution's nodejs $candidate"
    apt_install nodejs npm
    node_bin=/usr/bin/node
  else
    local found=none
    [ -z "$node_bin" ] || found="$("$node_bin" -v 2> /dev/null || echo '?') at $node_bin"
    die "Node.js >= $NODE_MIN_MAJOR.$NODE_MIN_MINOR is required (found $found) and this distribution has no new enough package: install Node.js 22 LTS (https://nodejs.org/en/download, or NodeSource), then re-run"
  fi
  npm_bin=$(command -v npm || true)
  if [ -z "$npm_bin" ] && [ "$dry_run" = 0 ]; then
    die "npm is missing (it comes with Node.js from nodejs.org; on Debian: apt-get install npm)"
  fi
}

create_user() {
  step "Creating the $APP_USER system user"
  if [ "$staged" = 0 ] && id -u "$APP_USER" > /dev/null 2>&1; then
    note "already there"
  else
    system useradd --system --user-group --home-dir "$DATA_DIR" --no-create-home --shell /usr/sbin/nologin "$APP_USER"
  fi
}

create_dirs() {
  step "Creating $CONFIG_DIR and $DATA_DIR"
  make_dir "$CONFIG_DIR" 0750 "root:$APP_USER"
  make_dir "$DATA_DIR" 0750 "$APP_USER:$APP_USER"
}

# The source tree: the one install.sh is in, or the --from tarball unpacked.
find_source() {
  if [ -z "$from" ]; then
    source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  else
    [ -f "$from" ] || die "--from: no such file $from"
    work=$(mktemp -d)
    tar -xzf "$from" -C "$work"
    source_dir=$(dirname "$(find "$work" -maxdepth 2 -name package.json -print -quit)")
    [ -f "$source_dir/package.json" ] || die "--from: $from holds no package.json"
  fi
  if [ ! -f "$source_dir/package-lock.json" ] || [ ! -d "$source_dir/src" ]; then die "$source_dir is not a Quoting source tree"; fi
}

readonly SOURCE_PARTS=(package.json package-lock.json tsconfig.json bin src migrations templates README.md install.sh)

# What the installed program was built from: a re-run with the same source rebuilds nothing.
source_hash() {
  (cd "$source_dir" && find "${SOURCE_PARTS[@]}" -type f -print0 2>/dev/null | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-64)
}

# Builds with the dev dependencies (TypeScript compiles in `prepare`), then prunes them, and
# swaps the result into /opt/quoting; the old tree is kept until the new one is in place.
install_program() {
  step "Installing the program in $PROGRAM_DIR"
  find_source
  local hash stamp="$root$PROGRAM_DIR/.source-sha256"
  hash=$(source_hash)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ]; then
    note "already built from this source ($(cut -c1-12 "$stamp")); nothing to rebuild"
    return 0
  fi
  if [ "$dry_run" = 1 ]; then
    echo "    would build $source_dir (npm ci, which compiles TypeScript; npm prune --omit=dev) and install it in $PROGRAM_DIR"
    return 0
  fi
  local build
  build=$(mktemp -d)
  (cd "$source_dir" && cp -a "${SOURCE_PARTS[@]}" "$build/")
  note "building (npm ci, then npm prune --omit=dev); this takes a minute"
  (cd "$build" && "$npm_bin" ci --no-audit --no-fund --loglevel=error > "$build.log" 2>&1 &&
    "$npm_bin" prune --omit=dev --no-audit --no-fund --loglevel=error >> "$build.log" 2>&1) ||
    { cat "$build.log" >&2; die "the build failed (log above)"; }
  rm -rf "$build/src" "$build/migrations" "$build/tsconfig.json" "$build.log"
  find "$build/dist" -name '*.map' -delete
  echo "$hash" > "$build/.source-sha256"
  mkdir -p "$(dirname "$root$PROGRAM_DIR")"
  rm -rf "$root$PROGRAM_DIR.new" "$root$PROGRAM_DIR.old"
  mv "$build" "$root$PROGRAM_DIR.new"
  chmod 0755 "$root$PROGRAM_DIR.new"
  new_program_ready=1
}

# Puts the new tree in place (the service is stopped first on an upgrade).
switch_program() {
  [ "${new_program_ready:-0}" = 1 ] || return 0
  [ ! -e "$root$PROGRAM_DIR" ] || mv "$root$PROGRAM_DIR" "$root$PROGRAM_DIR.old"
  mv "$root$PROGRAM_DIR.new" "$root$PROGRAM_DIR"
  rm -rf "$root$PROGRAM_DIR.old"
  [ "$staged" = 1 ] || chown -R root:root "$PROGRAM_DIR"
  note "installed $(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$root$PROGRAM_DIR/package.json" | head -n 1)"
}

setup_postgres() {
  [ "$with_postgres" = 1 ] || return 0
  step "Setting up PostgreSQL (role and database $APP_USER)"
  db_password=$(env_value DATABASE_URL | sed -n 's|^postgres://[^:]*:\([^@]*\)@.*|\1|p')
  if [ -z "$db_password" ]; then db_password=$(random_hex); fi
  if [ "$staged" = 1 ]; then
    note "skipped (--root): apt-get install postgresql, create role and database $APP_USER"
    return 0
  fi
  if ! command -v pg_lsclusters > /dev/null 2>&1; then
    apt_install postgresql
  fi
  if [ "$dry_run" = 1 ]; then
    echo "    would create the role and database $APP_USER (password generated, kept in $ENV_FILE)"
    return 0
  fi
  if systemd_running; then
    systemctl enable --now postgresql > /dev/null
  else
    local cluster
    cluster=$(pg_lsclusters -h | head -n 1 | awk '{print $1 " " $2}')
    # shellcheck disable=SC2086
    [ -z "$cluster" ] || pg_ctlcluster $cluster start 2> /dev/null || true
  fi
  local i
  for i in $(seq 1 30); do
    runuser -u postgres -- psql -qAtc 'select 1' > /dev/null 2>&1 && break
    [ "$i" = 30 ] && die "PostgreSQL did not start (see journalctl -u postgresql)"
    sleep 1
  done
  local verb=create
  [ "$(runuser -u postgres -- psql -qAtc "select 1 from pg_roles where rolname = '$APP_USER'")" != 1 ] || verb=alter
  runuser -u postgres -- psql -q -v ON_ERROR_STOP=1 -c "$verb role $APP_USER login password '$db_password'"
  if [ "$(runuser -u postgres -- psql -qAtc "select 1 from pg_database where datname = '$APP_USER'")" != 1 ]; then
    runuser -u postgres -- createdb -O "$APP_USER" "$APP_USER"
    note "created database $APP_USER"
  else
    note "database $APP_USER already there"
  fi
}

write_env_file() {
  step "Writing $ENV_FILE"
  local file="$root$ENV_FILE"
  local database_url=''
  [ "$with_postgres" = 0 ] || database_url="postgres://$APP_USER:$db_password@127.0.0.1:5432/$APP_USER"
  if [ -f "$file" ]; then
    # A re-run keeps every setting and secret; it only adds the database of a new --with-postgres.
    if [ -n "$database_url" ] && [ -z "$(env_value DATABASE_URL)" ]; then
      if [ "$dry_run" = 1 ]; then
        echo "    would add DATABASE_URL"
      else
        printf 'DATABASE_URL=%s\n' "$database_url" >> "$file"
        note "added DATABASE_URL"
      fi
    else
      note "kept (settings and secrets unchanged)"
    fi
    if [ -n "$url" ] && [ "$url" != "$(env_value APP_URL)" ]; then
      note "APP_URL stays $(env_value APP_URL); edit $ENV_FILE to change it"
    fi
    [ "$dry_run" = 1 ] || { chmod 0640 "$file"; [ "$staged" = 1 ] || chown "root:$APP_USER" "$file"; }
    return 0
  fi
  local app_url=${url:-http://127.0.0.1:$port} trust_proxy=0
  # https on a loopback-bound server means TLS ends at a reverse proxy in front of it.
  [[ "$app_url" != https://* ]] || trust_proxy=1
  put_file "$ENV_FILE" 0640 "root:$APP_USER" <<EOF
# Quoting settings, read by quoting.service, the worker and /usr/local/bin/quoting.
# Every variable is described in README.md (Configuration). Restart after a change: systemctl restart quoting
APP_URL=$app_url
HOST=127.0.0.1
PORT=$port
TRUST_PROXY=$trust_proxy
DATA_DIR=$DATA_DIR
MIGRATE_TOKEN=$(random_hex)
ADMIN_API_KEY=$(random_hex)
${database_url:+DATABASE_URL=$database_url}
EOF
}

write_wrapper() {
  step "Writing $WRAPPER"
  put_file "$WRAPPER" 0755 root:root <<EOF
#!/bin/sh
# The Quoting CLI with the installed settings, as the $APP_USER user (so files in $DATA_DIR keep their owner).
if [ "\$(id -u)" = 0 ]; then
  exec runuser -u $APP_USER -- env QUOTING_ENV_FILE=$ENV_FILE $node_bin $PROGRAM_DIR/bin/quoting "\$@"
fi
QUOTING_ENV_FILE=$ENV_FILE exec $node_bin $PROGRAM_DIR/bin/quoting "\$@"
EOF
}

# The sandbox of every unit: the program may write only its data directory.
hardening() {
  cat <<EOF
User=$APP_USER
Group=$APP_USER
EnvironmentFile=$ENV_FILE
WorkingDirectory=$DATA_DIR
UMask=0027
NoNewPrivileges=yes
ProtectSystem=strict
ReadWritePaths=$DATA_DIR
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictSUIDSGID=yes
RestrictRealtime=yes
RestrictNamespaces=yes
LockPersonality=yes
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
CapabilityBoundingSet=
SystemCallArchitectures=native
EOF
}

write_units() {
  database_url=$(env_value DATABASE_URL)
  [ "$dry_run" = 0 ] || [ "$with_postgres" = 0 ] || database_url=planned
  if [ -z "$worker_kind" ]; then
    if systemd_running; then worker_kind=timer; else worker_kind=cron; fi
  fi
  if ! systemd_running; then
    [ "$worker_kind" = cron ] || die "--worker $worker_kind needs systemd, which is not running here; use --worker cron"
    step "systemd is not running: no quoting.service (start \`quoting serve\` with your supervisor)"
  else
    step "Writing systemd units"
    put_file "$UNIT_DIR/quoting.service" 0644 root:root <<EOF
[Unit]
Description=Quoting API server (quoting serve)
Documentation=file://$PROGRAM_DIR/README.md
After=network-online.target postgresql.service
Wants=network-online.target

[Service]
Type=simple
ExecStart=$node_bin $PROGRAM_DIR/bin/quoting serve
Restart=on-failure
RestartSec=2
TimeoutStopSec=30
$(hardening)

[Install]
WantedBy=multi-user.target
EOF
  fi
  remove_worker_files
  [ -n "$database_url" ] || { note "embedded database: quoting serve delivers webhooks itself (no worker unit)"; return 0; }
  case "$worker_kind" in
    timer)
      put_file "$UNIT_DIR/quoting-worker.service" 0644 root:root <<EOF
[Unit]
Description=Quoting webhook worker, one batch (quoting worker)
After=network-online.target postgresql.service

[Service]
Type=oneshot
ExecStart=$node_bin $PROGRAM_DIR/bin/quoting worker
TimeoutStopSec=180
$(hardening)
EOF
      put_file "$UNIT_DIR/quoting-worker.timer" 0644 root:root <<EOF
[Unit]
Description=Run the Quoting webhook worker every minute

[Timer]
OnCalendar=*-*-* *:*:00
AccuracySec=1s

[Install]
WantedBy=timers.target
EOF
      ;;
    watch)
      put_file "$UNIT_DIR/quoting-worker.service" 0644 root:root <<EOF
[Unit]
Description=Quoting webhook worker (quoting worker --watch)
After=network-online.target postgresql.service
Wants=network-online.target

[Service]
Type=simple
ExecStart=$node_bin $PROGRAM_DIR/bin/quoting worker --watch
Restart=on-failure
RestartSec=2
TimeoutStopSec=180
$(hardening)

[Install]
WantedBy=multi-user.target
EOF
      ;;
    cron)
      put_file "$CRON_FILE" 0644 root:root <<EOF
# Quoting: deliver due webhooks every minute (silent when nothing is due).
QUOTING_ENV_FILE=$ENV_FILE
* * * * * $APP_USER $node_bin $PROGRAM_DIR/bin/quoting worker
EOF
      ;;
  esac
}

# A re-run with another --worker leaves only the chosen way of running the worker.
remove_worker_files() {
  local keep
  case "${database_url:+$worker_kind}" in
    timer) keep="quoting-worker.service quoting-worker.timer" ;;
    watch) keep="quoting-worker.service" ;;
    cron) keep="cron" ;;
    *) keep="" ;;
  esac
  if [[ " $keep " != *" quoting-worker.timer "* ]] && [ -e "$root$UNIT_DIR/quoting-worker.timer" ]; then
    system systemctl disable --now quoting-worker.timer
    run rm -f "$root$UNIT_DIR/quoting-worker.timer"
  fi
  if [[ " $keep " != *" quoting-worker.service "* ]] && [ -e "$root$UNIT_DIR/quoting-worker.service" ]; then
    system systemctl disable --now quoting-worker.service
    run rm -f "$root$UNIT_DIR/quoting-worker.service"
  fi
  if [ "$keep" != cron ] && [ -e "$root$CRON_FILE" ]; then run rm -f "$root$CRON_FILE"; fi
}

# A re-run restarts anyway; stopping first lets new code and migrations in (the embedded database
# admits one process at a time).
stop_service() {
  [ "$staged" = 0 ] && systemd_running || return 0
  if systemctl is-active --quiet quoting.service; then
    step "Stopping quoting.service for the upgrade"
    run systemctl stop quoting.service
  fi
}

migrate() {
  step "Applying database migrations"
  quoting migrate
}

start_services() {
  if ! systemd_running; then
    step "Not starting anything: systemd is not running"
    note "start the server with: runuser -u $APP_USER -- env QUOTING_ENV_FILE=$ENV_FILE $node_bin $PROGRAM_DIR/bin/quoting serve"
    return 0
  fi
  step "Starting quoting.service"
  system systemctl daemon-reload
  system systemctl enable quoting.service
  system systemctl restart quoting.service
  if [ -n "$database_url" ]; then
    case "$worker_kind" in
      timer) system systemctl enable --now quoting-worker.timer ;;
      watch) system systemctl enable quoting-worker.service && system systemctl restart quoting-worker.service ;;
    esac
  fi
  [ "$staged" = 0 ] && [ "$dry_run" = 0 ] || return 0
  local i
  for i in $(seq 1 30); do
    "$node_bin" -e "fetch('http://127.0.0.1:$(env_value PORT)/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))" && return 0
    sleep 1
  done
  note "quoting.service did not answer /healthz within 30 s; see journalctl -u quoting"
}

run_doctor() {
  step "Checking the installation (quoting doctor)"
  if [ "$staged" = 1 ]; then
    note "skipped (--root): nothing was started"
    return 0
  fi
  if [ "$dry_run" = 1 ]; then
    echo "    would run: quoting doctor"
    return 0
  fi
  quoting doctor
}

do_uninstall() {
  step "Removing Quoting"
  if [ "$staged" = 0 ] && [ "$(id -u)" != 0 ]; then die "run as root"; fi
  if [ "$staged" = 0 ] && command -v systemctl > /dev/null 2>&1 && systemd_running; then
    local unit
    for unit in quoting-worker.timer quoting-worker.service quoting.service; do
      [ ! -e "$UNIT_DIR/$unit" ] || run systemctl disable --now "$unit" || true
    done
  fi
  local database_url
  database_url=$(env_value DATABASE_URL)
  run rm -rf "$root$PROGRAM_DIR" "$root$PROGRAM_DIR.new" "$root$PROGRAM_DIR.old" "$root$WRAPPER" "$root$CRON_FILE" \
    "$root$UNIT_DIR/quoting.service" "$root$UNIT_DIR/quoting-worker.service" "$root$UNIT_DIR/quoting-worker.timer"
  [ "$staged" = 1 ] || ! systemd_running || run systemctl daemon-reload
  if [ "$purge" = 0 ]; then
    note "kept $CONFIG_DIR and $DATA_DIR${database_url:+ and the PostgreSQL database}; remove them with --uninstall --purge"
    return 0
  fi
  step "Purging settings, data and the $APP_USER user"
  if [[ "$database_url" == "postgres://$APP_USER:"*"@127.0.0.1:5432/$APP_USER" ]] && command -v psql > /dev/null 2>&1; then
    system runuser -u postgres -- dropdb --if-exists --force "$APP_USER"
    system runuser -u postgres -- psql -qc "drop role if exists $APP_USER"
  elif [ -n "$database_url" ]; then
    note "the database at DATABASE_URL was not created by this installer: left alone"
  fi
  run rm -rf "$root$CONFIG_DIR" "$root$DATA_DIR"
  if [ "$staged" = 1 ] || id -u "$APP_USER" > /dev/null 2>&1; then system userdel "$APP_USER"; fi
}

main() {
  if [ "$uninstall" = 1 ]; then
    do_uninstall
    return 0
  fi
  check_os
  check_node
  create_user
  create_dirs
  install_program
  setup_postgres
  write_env_file
  write_wrapper
  write_units
  stop_service
  [ "$dry_run" = 1 ] || switch_program
  if [ "$staged" = 1 ]; then
    step "Applying database migrations"
    note "skipped (--root): nothing is started"
  else
    migrate
  fi
  start_services
  run_doctor
}

node_bin='' npm_bin='' source_dir='' work='' db_password='' database_url='' new_program_ready=0
trap '[ -z "$work" ] || rm -rf "$work"' EXIT
main
