#!/usr/bin/env bash
# Installs (or upgrades, or removes) Quoting on a Debian or Ubuntu server. See "Install on a server" in README.md.
set -euo pipefail

readonly NODE_MIN_MAJOR=20 NODE_MIN_MINOR=19
readonly APP_USER=quoting
readonly PROGRAM_DIR=/opt/quoting CONFIG_DIR=/etc/quoting DATA_DIR=/var/lib/quoting
readonly ENV_FILE=/etc/quoting/quoting.env UNIT_DIR=/etc/systemd/system CRON_FILE=/etc/cron.d/quoting WRAPPER=/usr/local/bin/quoting
readonly BACKUP_CRON_FILE=/etc/cron.d/quoting-backup
readonly CADDY_DIR=/etc/caddy DEFAULT_MEMORY_MAX=1G
# The migrations need PostgreSQL 15 (`on delete set null (column)`).
readonly POSTGRES_MIN_MAJOR=15

usage() {
  cat <<'EOF'
Usage: install.sh [options]

Installs Quoting on Debian 12+ or Ubuntu 22.04+ (run as root), or upgrades an existing install in
place (new code, migrate, restart; settings, data and secrets are kept). Ends by running `quoting doctor`.

Options:
  --url URL            public base URL (APP_URL), e.g. https://quotes.example.com (first install only)
  --domain NAME        serve https://NAME through Caddy (installed from the distribution; automatic HTTPS):
                       sets APP_URL=https://NAME and TRUST_PROXY=1 (also on a re-run)
  --port N             port `quoting serve` listens on, on 127.0.0.1 (first install only; default 3000)
  --signup MODE        closed (the default of a first install) or open: whether anyone may sign up
  --memory-max SIZE    memory ceiling of the service (systemd MemoryMax, e.g. 768M; default 1G; kept on a re-run)
  --with-postgres      install PostgreSQL 15+ from the distribution and create the quoting role and database
  --restore FILE       with --with-postgres: load this `quoting backup` (of the embedded database) into the new
                       PostgreSQL database before the service is switched to it
  --worker KIND        how `quoting worker` runs on PostgreSQL: timer (systemd, every minute; the default),
                       cron (every minute; the default without systemd) or watch (a `worker --watch` unit)
  --backup SCHEDULE    scheduled backups into /var/lib/quoting/backups, e.g. --backup "0 3 * * *" (cron: minute
                       hour day-of-month month day-of-week; sets BACKUP_SCHEDULE): on the embedded database
                       `quoting serve` runs them, on PostgreSQL the quoting-backup timer (or a cron entry) runs
                       `quoting backup`; --backup off removes the schedule
  --update             update an existing install (settings kept): check the new source builds, stop the service,
                       back up the database (quoting backup --out BACKUP_DIR/quoting-before-update-TIME.backup),
                       put the new program in place (the previous one stays in /opt/quoting.previous), migrate,
                       start, and run `quoting doctor`; if migrating or the doctor fails, print how to roll back
  --from SOURCE        install this source tarball (e.g. from `git archive`) or source directory instead of the
                       tree install.sh is in
  --root DIR           write every file under DIR instead of /, start nothing (no root needed; for tests)
  --dry-run            print each step and change nothing
  --uninstall          remove the program, units and cron entry; keeps settings and data
  --purge              with --uninstall: also remove settings, data, the quoting user and the database
  -h, --help           show this help

Creates: the `quoting` system user, the program in /opt/quoting, settings in /etc/quoting/quoting.env
(generated MIGRATE_TOKEN and ADMIN_API_KEY, SIGNUP=closed, mode 0640, root:quoting), data in /var/lib/quoting,
quoting.service (`quoting serve`), on PostgreSQL the worker timer, cron entry or watch unit (and with
--backup the backup timer or cron entry), and
/usr/local/bin/quoting (runs the CLI as the quoting user with these settings), and with --domain
/etc/caddy/quoting.caddy (imported by /etc/caddy/Caddyfile).
EOF
}

url='' domain='' port=3000 signup='' memory_max='' with_postgres=0 restore='' worker_kind='' backup='' from='' root='' dry_run=0 uninstall=0 purge=0 update=0

die() {
  echo "install.sh: $*" >&2
  exit 1
}

usage_error() {
  echo "install.sh: $*" >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --url) url=${2:?--url needs a value}; shift ;;
    --url=*) url=${1#*=} ;;
    --domain) domain=${2:?--domain needs a value}; shift ;;
    --domain=*) domain=${1#*=} ;;
    --port) port=${2:?--port needs a value}; shift ;;
    --port=*) port=${1#*=} ;;
    --signup) signup=${2:?--signup needs a value}; shift ;;
    --signup=*) signup=${1#*=} ;;
    --memory-max) memory_max=${2:?--memory-max needs a value}; shift ;;
    --memory-max=*) memory_max=${1#*=} ;;
    --with-postgres) with_postgres=1 ;;
    --restore) restore=${2:?--restore needs a value}; shift ;;
    --restore=*) restore=${1#*=} ;;
    --worker) worker_kind=${2:?--worker needs a value}; shift ;;
    --worker=*) worker_kind=${1#*=} ;;
    --backup) backup=${2:?--backup needs a value}; shift ;;
    --backup=*) backup=${1#*=} ;;
    --from) from=${2:?--from needs a value}; shift ;;
    --from=*) from=${1#*=} ;;
    --root) root=${2:?--root needs a value}; shift ;;
    --root=*) root=${1#*=} ;;
    --dry-run) dry_run=1 ;;
    --uninstall) uninstall=1 ;;
    --update) update=1 ;;
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
if [ -n "$domain" ]; then
  [[ "$domain" =~ ^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$ ]] ||
    usage_error "--domain expects a host name such as quotes.example.com"
  [ -z "$url" ] || usage_error "--domain sets APP_URL to https://$domain: leave out --url"
  url=https://$domain
fi
case "$signup" in '' | open | closed) ;; *) usage_error "--signup expects open or closed" ;; esac
if [ -n "$memory_max" ] && ! [[ "$memory_max" =~ ^([1-9][0-9]*[KMGT]?|[1-9][0-9]?%|infinity)$ ]]; then
  usage_error "--memory-max expects a size such as 1G or 768M (or infinity)"
fi
[ -z "$restore" ] || [ "$with_postgres" = 1 ] || usage_error "--restore goes with --with-postgres"
if [ "$update" = 1 ]; then
  [ "$uninstall" = 0 ] || usage_error "--update and --uninstall do not go together"
  # An update keeps the settings; changing them is a re-run's job (install.sh with those options).
  if [ -n "$url$domain$signup$memory_max$restore$worker_kind$backup" ] || [ "$with_postgres" = 1 ] || [ "$port" != 3000 ]; then
    usage_error "--update keeps the settings: give only --from, --root or --dry-run (change settings with a re-run of install.sh)"
  fi
fi

# One field of a cron expression as systemd.time(7) writes it: *, */N, and lists of numbers and ranges (a-b).
# $2..$3 is the field's range, $4 where a step starts. Prints nothing and fails on anything else.
calendar_field() {
  local value=$1 min=$2 max=$3 start=$4 out='' item a b
  local -a items
  if [ "$value" = '*' ]; then echo '*'; return 0; fi
  if [[ "$value" =~ ^\*/([0-9]{1,2})$ ]]; then
    a=$((10#${BASH_REMATCH[1]}))
    [ "$a" -ge 1 ] && [ "$a" -le "$max" ] || return 1
    echo "$start/$a"
    return 0
  fi
  IFS=, read -ra items <<< "$value"
  [ "${#items[@]}" -gt 0 ] || return 1
  for item in "${items[@]}"; do
    if [[ "$item" =~ ^([0-9]{1,2})(-([0-9]{1,2}))?$ ]]; then
      a=$((10#${BASH_REMATCH[1]}))
      b=$((10#${BASH_REMATCH[3]:-${BASH_REMATCH[1]}}))
      [ "$a" -ge "$min" ] && [ "$b" -le "$max" ] && [ "$a" -le "$b" ] || return 1
      if [ "$a" = "$b" ]; then out+=",$a"; else out+=",$a..$b"; fi
    else
      return 1
    fi
  done
  echo "${out#,}"
}

# A 5-field cron expression (minute hour day-of-month month day-of-week) as a timer's OnCalendar, in the same
# (local) time; fails on what a timer would read otherwise: names, steps over ranges, seconds, or a day of the month
# together with a day of the week (cron runs on either, a timer only on both).
cron_to_calendar() {
  local -a f
  local minute hour day month weekday='' names=(Sun Mon Tue Wed Thu Fri Sat Sun) item out=''
  read -ra f <<< "$1"
  [ "${#f[@]}" = 5 ] || return 1
  minute=$(calendar_field "${f[0]}" 0 59 0) || return 1
  hour=$(calendar_field "${f[1]}" 0 23 0) || return 1
  day=$(calendar_field "${f[2]}" 1 31 1) || return 1
  month=$(calendar_field "${f[3]}" 1 12 1) || return 1
  if [ "${f[4]}" != '*' ]; then
    [ "${f[2]}" = '*' ] || return 1
    weekday=$(calendar_field "${f[4]}" 0 7 0) || return 1
    [[ "$weekday" != */* ]] || return 1
    for item in ${weekday//,/ }; do
      if [[ "$item" == *..* ]]; then out+=",${names[${item%..*}]}..${names[${item#*..}]}"; else out+=",${names[$item]}"; fi
    done
    weekday="${out#,} "
  fi
  echo "$weekday*-$month-$day $hour:$minute:00"
}

case "$backup" in
  '' | off) ;;
  *) cron_to_calendar "$backup" > /dev/null ||
    usage_error "--backup expects a cron expression of 5 fields (minute hour day-of-month month day-of-week) with numbers, *, */N, lists and ranges, such as \"0 3 * * *\"; a day of the month or of the week, not both" ;;
esac

# In --root mode every path is under the staging root and nothing outside it is touched or started.
staged=0
if [ -n "$root" ]; then
  staged=1
  mkdir -p "$root"
  root=$(cd "$root" && pwd)
fi
readonly root staged dry_run update

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

# Runs the installed CLI as the quoting user with the installed settings. In --root mode (only --update calls it
# there) the staged program runs with the staged settings, its data directories moved under the staging root.
quoting() {
  if [ "$staged" = 1 ]; then
    run env QUOTING_ENV_FILE="$root$ENV_FILE" DATA_DIR="$root$(data_dir_setting)" BACKUP_DIR="$root$(backup_dir_setting)" "$node_bin" "$root$PROGRAM_DIR/bin/quoting" "$@"
    return
  fi
  system runuser -u "$APP_USER" -- env QUOTING_ENV_FILE="$ENV_FILE" "$node_bin" "$PROGRAM_DIR/bin/quoting" "$@"
}

# DATA_DIR and BACKUP_DIR as the settings give them (or their defaults).
data_dir_setting() { local dir; dir=$(env_value DATA_DIR); echo "${dir:-$DATA_DIR}"; }
backup_dir_setting() { local dir; dir=$(env_value BACKUP_DIR); echo "${dir:-$(data_dir_setting)/backups}"; }

check_os() {
  step "Checking the system"
  if [ "$staged" = 0 ] && [ "$(id -u)" != 0 ]; then
    [ "$dry_run" = 1 ] || die "run as root (sudo bash install.sh ...), or with --root DIR to stage the files"
    note "not root: a real run needs root (sudo); this dry run only reads"
    [ ! -e "$ENV_FILE" ] || [ -r "$ENV_FILE" ] || die "$ENV_FILE is there but not readable by $(id -un): run the dry run as root to see what a re-run would do"
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

# The version apt would install of a package ('' when none), the package lists refreshed first (not in a dry run).
apt_candidate() {
  if [ "$dry_run" = 0 ] && [ "$apt_updated" = 0 ] && apt-get update -q > /dev/null 2>&1; then apt_updated=1; fi
  local candidate
  candidate=$(apt-cache policy "$1" 2> /dev/null | sed -n 's/^ *Candidate: *//p' | head -n 1)
  [ "$candidate" = "(none)" ] || echo "$candidate"
}

# The distribution's nodejs version when it is new enough.
distro_node() {
  local candidate
  candidate=$(apt_candidate nodejs)
  [ -n "$candidate" ] && dpkg --compare-versions "$candidate" ge "$NODE_MIN_MAJOR.$NODE_MIN_MINOR" && echo "$candidate"
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

postgres_major_ok() { [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge "$POSTGRES_MIN_MAJOR" ]; }

# With --with-postgres, before anything changes: the PostgreSQL that would hold the data is new enough. That is the
# cluster on port 5432 (where DATABASE_URL points) when there is one, otherwise the one apt would install.
postgres_from=''
check_postgres() {
  [ "$with_postgres" = 1 ] || return 0
  step "Checking PostgreSQL ($POSTGRES_MIN_MAJOR or later)"
  if [ "$staged" = 1 ]; then
    note "skipped (--root): the PostgreSQL of this machine is not the target's"
    return 0
  fi
  local cluster='' candidate major
  if command -v pg_lsclusters > /dev/null 2>&1; then
    cluster=$(pg_lsclusters -h 2> /dev/null | awk '$3 == 5432 { print $1 " " $2; exit }')
  fi
  if [ -n "$cluster" ]; then
    major=${cluster%% *}
    major=${major%%.*}
    postgres_major_ok "$major" ||
      die "the PostgreSQL cluster on port 5432 is ${cluster%% *} (pg_lsclusters), and Quoting needs $POSTGRES_MIN_MAJOR or later. Nothing was changed. Install postgresql-$POSTGRES_MIN_MAJOR or later (from PGDG, https://www.postgresql.org/download/linux/, where the distribution has none) and move the cluster to it with pg_upgradecluster $cluster, then re-run."
    postgres_from=cluster
    note "PostgreSQL $major (the cluster on port 5432, pg_lsclusters)"
    return 0
  fi
  candidate=$(apt_candidate postgresql)
  [ -n "$candidate" ] ||
    die "this distribution offers no postgresql package (apt-cache policy postgresql). Nothing was changed. Run apt-get update, or add PostgreSQL's own apt repository (PGDG: https://www.postgresql.org/download/linux/) and install postgresql-$POSTGRES_MIN_MAJOR or later, then re-run."
  major=${candidate#*:}
  major=${major%%[.+~-]*}
  postgres_major_ok "$major" ||
    die "this distribution's PostgreSQL is $major (apt-cache policy postgresql), and Quoting needs $POSTGRES_MIN_MAJOR or later. Nothing was changed. Add PostgreSQL's own apt repository (PGDG: https://www.postgresql.org/download/linux/) and install postgresql-$POSTGRES_MIN_MAJOR or later (apt-get install postgresql-16), then re-run."
  postgres_from=apt
  note "PostgreSQL $major (apt-cache policy postgresql)"
}

# --with-postgres over an install that runs on the embedded database would bring the service back on an empty
# database: stop before anything changes and say how to move the data, unless --restore brings a backup along.
check_embedded_data() {
  [ "$with_postgres" = 1 ] || return 0
  if [ -n "$(env_value DATABASE_URL)" ]; then
    [ -z "$restore" ] || die "--restore: this install already runs on PostgreSQL (DATABASE_URL in $ENV_FILE); to replace its data: sudo quoting restore FILE --force"
    return 0
  fi
  local data_dir
  data_dir=$(env_value DATA_DIR)
  data_dir=${data_dir:-$DATA_DIR}
  if [ -n "$restore" ]; then
    [ -f "$restore" ] || die "--restore: no such file $restore"
    restore=$(cd "$(dirname "$restore")" && pwd)/$(basename "$restore")
    if [ "$staged" = 0 ] && id -u "$APP_USER" > /dev/null 2>&1 && ! runuser -u "$APP_USER" -- test -r "$restore"; then
      die "--restore: the $APP_USER user cannot read $restore (it restores as that user): put the file in $data_dir, as 'quoting backup --out $data_dir/...' does"
    fi
    return 0
  fi
  [ -d "$root$data_dir/pglite" ] || return 0
  die "$data_dir holds the embedded database this server runs on; with --with-postgres the service would start on a new, empty PostgreSQL database. Nothing was changed. To move the data across:
  sudo systemctl stop quoting
  sudo quoting backup --out $data_dir/embedded.backup
  sudo bash install.sh --with-postgres --restore $data_dir/embedded.backup
--restore creates the PostgreSQL database, loads the backup into it (DATABASE_URL=… quoting restore FILE, as the $APP_USER user) and only then switches the service over. The embedded database stays in $data_dir/pglite."
}

# With --domain: Caddy is there, or the distribution has it to install.
caddy_install=0
check_caddy() {
  [ -n "$domain" ] || return 0
  step "Checking Caddy (the TLS proxy for https://$domain)"
  if [ "$staged" = 1 ]; then
    caddy_install=1
    note "skipped (--root): caddy is not looked for"
    return 0
  fi
  if command -v caddy > /dev/null 2>&1; then
    note "caddy $(caddy version 2> /dev/null | cut -d' ' -f1) at $(command -v caddy)"
    return 0
  fi
  local candidate
  candidate=$(apt_candidate caddy)
  [ -n "$candidate" ] ||
    die "this distribution offers no caddy package (apt-cache policy caddy). Nothing was changed. Install Caddy from its own apt repository (https://caddyserver.com/docs/install) and re-run, or leave out --domain and put a TLS proxy of your own in front of 127.0.0.1:$port (README: Install on a server)."
  caddy_install=1
  note "the distribution's caddy $candidate will be installed"
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

# The source tree: the one install.sh is in, the --from directory, or the --from tarball unpacked (once).
find_source() {
  [ -z "$source_dir" ] || return 0
  if [ -z "$from" ]; then
    source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    # The installed program ships install.sh without its sources: an update from there needs the new source.
    [ "$update" = 0 ] || [ -d "$source_dir/src" ] || die "--update needs the new source: give --from TARBALL_OR_DIR, or run install.sh --update from the new checkout. Nothing was changed."
  elif [ -d "$from" ]; then
    source_dir=$(cd "$from" && pwd)
  else
    [ -f "$from" ] || die "--from: no such file or directory $from"
    work=$(mktemp -d)
    tar -xzf "$from" -C "$work"
    source_dir=$(dirname "$(find "$work" -maxdepth 2 -name package.json -print -quit)")
    [ -f "$source_dir/package.json" ] || die "--from: $from holds no package.json"
  fi
  if [ ! -f "$source_dir/package-lock.json" ] || [ ! -d "$source_dir/src" ]; then die "$source_dir is not a Quoting source tree"; fi
}

readonly SOURCE_PARTS=(package.json package-lock.json tsconfig.json bin src migrations templates public README.md docs install.sh)

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

# Puts the new tree in place (the service is stopped first on an upgrade). --update keeps the one it replaces in
# /opt/quoting.previous, to roll back to.
switch_program() {
  [ "${new_program_ready:-0}" = 1 ] || return 0
  [ ! -e "$root$PROGRAM_DIR" ] || mv "$root$PROGRAM_DIR" "$root$PROGRAM_DIR.old"
  mv "$root$PROGRAM_DIR.new" "$root$PROGRAM_DIR"
  if [ "$update" = 1 ] && [ -e "$root$PROGRAM_DIR.old" ]; then
    rm -rf "$root$PROGRAM_DIR.previous"
    mv "$root$PROGRAM_DIR.old" "$root$PROGRAM_DIR.previous"
    program_replaced=1
    note "the previous program is kept in $PROGRAM_DIR.previous"
  fi
  rm -rf "$root$PROGRAM_DIR.old"
  [ "$staged" = 1 ] || chown -R root:root "$PROGRAM_DIR"
  note "installed $(package_version "$root$PROGRAM_DIR")"
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
  if [ "$postgres_from" = apt ]; then
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
  create_role
  if [ "$(runuser -u postgres -- psql -qAtc "select 1 from pg_database where datname = '$APP_USER'")" != 1 ]; then
    runuser -u postgres -- createdb -O "$APP_USER" "$APP_USER"
    note "created database $APP_USER"
  else
    note "database $APP_USER already there"
  fi
}

# The role's password goes to psql on standard input: on a command line, ps would show it to every user.
create_role() {
  local verb=create
  [ "$(runuser -u postgres -- psql -qAtc "select 1 from pg_roles where rolname = '$APP_USER'")" != 1 ] || verb=alter
  printf "%s role %s login password '%s';\n" "$verb" "$APP_USER" "$db_password" | runuser -u postgres -- psql -q -v ON_ERROR_STOP=1
}

# --restore: the backup goes into the new, empty PostgreSQL database before DATABASE_URL sends the service there;
# a failed restore stops here, with the settings still on the embedded database.
restore_backup() {
  [ -n "$restore" ] || return 0
  step "Restoring $restore into the PostgreSQL database"
  if [ "$staged" = 1 ]; then
    note "skipped (--root): quoting restore $restore into the new PostgreSQL database"
    return 0
  fi
  if [ "$dry_run" = 1 ]; then
    echo "    would run: quoting restore $restore (as $APP_USER, with the DATABASE_URL of the new database)"
    return 0
  fi
  if systemd_running && systemctl is-active --quiet quoting.service; then
    note "stopping quoting.service: what it wrote after the backup would be lost"
    systemctl stop quoting.service
  fi
  local program=$PROGRAM_DIR settings=()
  [ "$new_program_ready" = 0 ] || program=$PROGRAM_DIR.new
  [ ! -f "$ENV_FILE" ] || settings=(env "QUOTING_ENV_FILE=$ENV_FILE")
  # The URL holds the password: it travels in the environment, which ps does not show, not on the command line.
  DATABASE_URL="postgres://$APP_USER:$db_password@127.0.0.1:5432/$APP_USER" runuser -u "$APP_USER" -- "${settings[@]}" "$node_bin" "$program/bin/quoting" restore "$restore" ||
    die "the restore failed (above); nothing was switched: $ENV_FILE still names the embedded database (start it again with systemctl start quoting), and the PostgreSQL database $APP_USER is left for a look (drop it with: runuser -u postgres -- dropdb $APP_USER)"
}

# Sets KEY=VALUE in the env file, in its line or a new one at the end; an unchanged value leaves the file alone.
env_changes=0
set_env_value() {
  local file="$root$ENV_FILE" tmp
  [ "$(env_value "$1")" != "$2" ] || return 0
  env_changes=$((env_changes + 1))
  if [ "$dry_run" = 1 ]; then
    echo "    would set $1 in $ENV_FILE"
    return 0
  fi
  tmp=$(mktemp "$file.XXXXXX")
  # Through the environment, not awk's arguments: DATABASE_URL holds a password.
  K=$1 V=$2 awk 'index($0, ENVIRON["K"] "=") == 1 { if (!done) print ENVIRON["K"] "=" ENVIRON["V"]; done = 1; next }
    { print } END { if (!done) print ENVIRON["K"] "=" ENVIRON["V"] }' "$file" > "$tmp"
  mv "$tmp" "$file"
  note "set $1"
}

write_env_file() {
  step "Writing $ENV_FILE"
  local file="$root$ENV_FILE"
  local database_url=''
  [ "$with_postgres" = 0 ] || database_url="postgres://$APP_USER:$db_password@127.0.0.1:5432/$APP_USER"
  if [ -f "$file" ]; then
    # A re-run keeps every setting and secret; it only adds the database of a new --with-postgres and applies
    # --domain and --signup.
    [ -z "$database_url" ] || [ -n "$(env_value DATABASE_URL)" ] || set_env_value DATABASE_URL "$database_url"
    if [ -n "$domain" ]; then
      set_env_value APP_URL "https://$domain"
      set_env_value TRUST_PROXY 1
    elif [ -n "$url" ] && [ "$url" != "$(env_value APP_URL)" ]; then
      note "APP_URL stays $(env_value APP_URL); edit $ENV_FILE to change it"
    fi
    [ -z "$signup" ] || set_env_value SIGNUP "$signup"
    case "$backup" in '') ;; off) set_env_value BACKUP_SCHEDULE '' ;; *) set_env_value BACKUP_SCHEDULE "$backup" ;; esac
    [ "$env_changes" != 0 ] || note "kept (settings and secrets unchanged)"
    [ -n "$(env_value SIGNUP)" ] || note "SIGNUP is not set, so anyone may sign up; --signup closed closes it"
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
SIGNUP=${signup:-closed}
DATA_DIR=$DATA_DIR
MIGRATE_TOKEN=$(random_hex)
ADMIN_API_KEY=$(random_hex)
${database_url:+DATABASE_URL=$database_url}
$([ -z "$backup" ] || [ "$backup" = off ] || echo "BACKUP_SCHEDULE=$backup")
EOF
}

# `quoting` on the PATH: `sudo quoting ...` runs the CLI as the service user with the installed settings.
write_wrapper() {
  step "Writing $WRAPPER"
  put_file "$WRAPPER" 0755 root:root <<EOF
#!/bin/sh
# The Quoting CLI with the installed settings, as the $APP_USER user (so files in $DATA_DIR keep their owner).
set -eu
if [ "\$(id -u)" != 0 ]; then
  QUOTING_ENV_FILE=$ENV_FILE exec $node_bin $PROGRAM_DIR/bin/quoting "\$@"
fi
# import KIND FILE: the file is opened here, by the caller (root may read ~/catalogue.csv, the $APP_USER user may
# not), and handed over on standard input ('-'). The other words pass unchanged.
words=0 command='' file='' options=1 value=0
for arg do
  shift
  if [ "\$value" = 1 ]; then
    value=0
  elif [ "\$options" = 1 ] && [ "\$arg" = -- ]; then
    options=0
  elif [ "\$options" = 1 ] && { [ "\$arg" = --env-file ] || [ "\$arg" = --workspace ] || [ "\$arg" = --on-error ]; }; then
    value=1
  elif [ "\$options" = 0 ] || [ "\$arg" = - ] || [ "\${arg#-}" = "\$arg" ]; then
    words=\$((words + 1))
    [ "\$words" != 1 ] || command=\$arg
    if [ "\$words" = 3 ] && [ "\$command" = import ] && [ "\$arg" != - ]; then
      file=\$arg
      arg=-
    fi
  fi
  set -- "\$@" "\$arg"
done
if [ -n "\$file" ]; then
  reason=''
  if [ -d "\$file" ]; then reason='it is a directory'
  elif [ ! -e "\$file" ]; then reason='no such file'
  elif [ ! -r "\$file" ]; then reason='permission denied'
  fi
  if [ -n "\$reason" ]; then
    echo "error: cannot read \$file: \$reason" >&2
    exit 1
  fi
  exec < "\$file"
fi
# update runs the installer (install.sh --update), which needs root: it switches to $APP_USER where it must.
if [ "\${1:-}" = update ]; then
  QUOTING_ENV_FILE=$ENV_FILE exec $node_bin $PROGRAM_DIR/bin/quoting "\$@"
fi
exec runuser -u $APP_USER -- env QUOTING_ENV_FILE=$ENV_FILE $node_bin $PROGRAM_DIR/bin/quoting "\$@"
EOF
}

# The sandbox of every unit: the program may write only its data directory, and use at most --memory-max.
hardening() {
  cat <<EOF
MemoryMax=$memory_max
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
  # A re-run without --memory-max keeps the ceiling the unit has.
  if [ -z "$memory_max" ] && [ -f "$root$UNIT_DIR/quoting.service" ]; then
    memory_max=$(sed -n 's/^MemoryMax=//p' "$root$UNIT_DIR/quoting.service" | head -n 1)
  fi
  memory_max=${memory_max:-$DEFAULT_MEMORY_MAX}
  database_url=$(env_value DATABASE_URL)
  [ "$dry_run" = 0 ] || [ "$with_postgres" = 0 ] || database_url=planned
  # A re-run without --worker keeps the way the worker runs now.
  if [ -z "$worker_kind" ] && [ -f "$root$CRON_FILE" ]; then
    worker_kind=cron
  elif [ -z "$worker_kind" ] && grep -q -- '--watch$' "$root$UNIT_DIR/quoting-worker.service" 2> /dev/null; then
    worker_kind=watch
  fi
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

# The backup schedule this run leaves: --backup's (off: none), else the one in the env file.
backup_schedule() {
  case "$backup" in
    off) ;;
    '') env_value BACKUP_SCHEDULE ;;
    *) echo "$backup" ;;
  esac
}

# Where something other than `quoting serve` runs the backups (PostgreSQL), the schedule must be one a timer or cron
# reads as node-cron does: checked before anything changes (a hand-edited BACKUP_SCHEDULE may have six fields).
check_backup_schedule() {
  local schedule
  schedule=$(backup_schedule)
  [ -n "$schedule" ] && { [ "$with_postgres" = 1 ] || [ -n "$(env_value DATABASE_URL)" ]; } || return 0
  cron_to_calendar "$schedule" > /dev/null ||
    die "BACKUP_SCHEDULE=$schedule in $ENV_FILE cannot be run by a timer on PostgreSQL: give a 5-field schedule with --backup (such as --backup \"0 3 * * *\")"
}

# Scheduled backups on PostgreSQL: a timer (without systemd, a cron entry) runs `quoting backup` on BACKUP_SCHEDULE.
# On the embedded database `quoting serve` runs them itself.
write_backup_units() {
  local schedule calendar
  schedule=$(backup_schedule)
  remove_backup_files "$schedule"
  [ -n "$schedule" ] || return 0
  if [ -z "$database_url" ]; then
    note "embedded database: quoting serve runs the backups ($schedule) itself (no backup unit)"
    return 0
  fi
  calendar=$(cron_to_calendar "$schedule")
  if ! systemd_running; then
    step "Writing the backup cron entry ($schedule)"
    put_file "$BACKUP_CRON_FILE" 0644 root:root <<EOF
# Quoting: a backup into BACKUP_DIR on BACKUP_SCHEDULE (written by install.sh --backup).
QUOTING_ENV_FILE=$ENV_FILE
$schedule $APP_USER $node_bin $PROGRAM_DIR/bin/quoting backup
EOF
    return 0
  fi
  step "Writing the backup timer ($schedule)"
  put_file "$UNIT_DIR/quoting-backup.service" 0644 root:root <<EOF
[Unit]
Description=Quoting scheduled backup (quoting backup into BACKUP_DIR)
After=network-online.target postgresql.service

[Service]
Type=oneshot
ExecStart=$node_bin $PROGRAM_DIR/bin/quoting backup
TimeoutStartSec=6h
TimeoutStopSec=60
$(hardening)
EOF
  put_file "$UNIT_DIR/quoting-backup.timer" 0644 root:root <<EOF
[Unit]
Description=Run the Quoting backup on BACKUP_SCHEDULE ($schedule)

[Timer]
OnCalendar=$calendar
Persistent=true

[Install]
WantedBy=timers.target
EOF
}

# Only the way of running backups this run chose stays (none on the embedded database, or without a schedule).
remove_backup_files() {
  local keep=''
  if [ -n "$1" ] && [ -n "$database_url" ]; then
    if systemd_running; then keep=timer; else keep=cron; fi
  fi
  if [ "$keep" != timer ] && [ -e "$root$UNIT_DIR/quoting-backup.timer" ]; then
    system systemctl disable --now quoting-backup.timer
    run rm -f "$root$UNIT_DIR/quoting-backup.timer" "$root$UNIT_DIR/quoting-backup.service"
  fi
  if [ "$keep" != cron ] && [ -e "$root$BACKUP_CRON_FILE" ]; then run rm -f "$root$BACKUP_CRON_FILE"; fi
}

# The distribution's example Caddyfile, as the caddy package left it (a file server on :80).
caddyfile_untouched() {
  [ "$staged" = 0 ] || return 1
  local packaged
  # shellcheck disable=SC2016 # ${Conffiles} is dpkg-query's, not the shell's
  packaged=$(dpkg-query -W -f='${Conffiles}\n' caddy 2> /dev/null | awk '$1 == "/etc/caddy/Caddyfile" { print $2 }')
  [ -n "$packaged" ] && [ "$(md5sum < "$1" | cut -d' ' -f1)" = "$packaged" ]
}

# --domain: Caddy terminates TLS for the domain (certificates obtained and renewed by itself) and proxies to the
# service. The site is a file of its own, imported by the Caddyfile, whose other sites are kept.
write_proxy() {
  [ -n "$domain" ] || return 0
  step "Writing the Caddy site for https://$domain"
  if [ "$caddy_install" = 1 ]; then
    if [ "$staged" = 1 ]; then note "skipped (--root): apt-get install caddy"; else apt_install caddy; fi
  fi
  local upstream_port
  upstream_port=$(env_value PORT)
  put_file "$CADDY_DIR/quoting.caddy" 0644 root:root <<EOF
# Quoting at https://$domain, written by install.sh --domain: Caddy obtains and renews the certificate, redirects
# http to https, and passes requests to quoting serve with X-Forwarded-For and -Proto (read as TRUST_PROXY=1 says).
$domain {
	reverse_proxy 127.0.0.1:${upstream_port:-$port}
}
EOF
  local caddyfile="$root$CADDY_DIR/Caddyfile"
  if [ ! -f "$caddyfile" ] || caddyfile_untouched "$caddyfile"; then
    put_file "$CADDY_DIR/Caddyfile" 0644 root:root <<'EOF'
# The sites Caddy serves (written by Quoting's install.sh in place of the distribution's example).
# Other sites may be added below: a re-run of install.sh keeps this file once it has changed.
import quoting.caddy
EOF
  elif grep -qx 'import quoting.caddy' "$caddyfile"; then
    note "$CADDY_DIR/Caddyfile imports quoting.caddy already"
  elif [ "$dry_run" = 1 ]; then
    echo "    would add 'import quoting.caddy' to $CADDY_DIR/Caddyfile (its own sites are kept)"
  else
    printf '\n# Quoting (added by install.sh --domain)\nimport quoting.caddy\n' >> "$caddyfile"
    note "added 'import quoting.caddy' to $CADDY_DIR/Caddyfile (its own sites are kept)"
  fi
}

# Caddy reads the new site (reload refuses a Caddyfile that does not load, and keeps serving the old one).
start_proxy() {
  [ -n "$domain" ] || return 0
  step "Starting Caddy for https://$domain"
  if [ "$staged" = 1 ]; then
    note "skipped (--root): nothing is started"
    return 0
  fi
  if ! systemd_running; then
    note "systemd is not running: start Caddy with: caddy run --config $CADDY_DIR/Caddyfile"
    return 0
  fi
  system systemctl enable --now caddy.service
  system systemctl reload caddy.service || die "Caddy refused $CADDY_DIR/Caddyfile (see journalctl -u caddy); quoting.service runs on 127.0.0.1 meanwhile"
  note "https://$domain answers once its DNS names this server and ports 80 and 443 are open (the first certificate takes a few seconds)"
}

# A re-run restarts anyway; stopping first lets new code and migrations in (the embedded database
# admits one process at a time).
service_was_active=''
stop_service() {
  [ "$staged" = 0 ] && systemd_running || return 0
  if systemctl is-active --quiet quoting.service; then
    step "Stopping quoting.service for the upgrade"
    run systemctl stop quoting.service
    service_was_active=1
  fi
}

migrate() {
  step "Applying database migrations"
  if [ "$update" = 0 ]; then
    quoting migrate
  else
    quoting migrate || rollback_help "the migration failed (above); the service is not started"
  fi
}

# --update, before anything changes: there is an install to update, and the new source (built by install_program,
# into /opt/quoting.new, before the service is stopped).
check_update() {
  step "Checking the install to update"
  if [ ! -f "$root$PROGRAM_DIR/bin/quoting" ] || [ ! -f "$root$ENV_FILE" ]; then
    die "--update: Quoting is not installed here (no $PROGRAM_DIR or $ENV_FILE). Nothing was changed. Install it first: sudo bash install.sh (README: Install on a server)"
  fi
  find_source
  note "installed: $(package_version "$root$PROGRAM_DIR"); new: $(package_version "$source_dir") from $source_dir"
}

package_version() { sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$1/package.json" | head -n 1; }

# --update: a backup of the database as it is before the update (the service stopped: nothing written after it is
# lost by a rollback), named for its time and not counted in BACKUP_KEEP.
update_backup=''
take_backup() {
  local dir
  dir=$(backup_dir_setting)
  update_backup=$dir/quoting-before-update-$(date -u +%Y-%m-%dT%H%M%SZ).backup
  local i=2 base=${update_backup%.backup}
  while [ -e "$root$update_backup" ]; do update_backup=$base-$i.backup; i=$((i + 1)); done
  step "Backing up the database to $update_backup"
  [ -d "$root$dir" ] || make_dir "$dir" 0700 "$APP_USER:$APP_USER"
  if ! quoting backup --out "$root$update_backup"; then
    if [ "$service_was_active" = 1 ]; then run systemctl start quoting.service; fi
    die "the backup failed (above). Nothing was changed${service_was_active:+ (quoting.service runs the previous program again)}: fix the cause and run the update again"
  fi
}

# --update, when migrating or the doctor fails: exits 1 saying how to go back to the version and data of before.
rollback_help() {
  local start='sudo systemctl start quoting' stop='sudo systemctl stop quoting'
  systemd_running || { start="start quoting serve again as before"; stop="stop quoting serve"; }
  {
    echo "install.sh: $1."
    echo "To roll back to the version and the data of before the update:"
    echo "  $stop"
    [ "$program_replaced" = 0 ] || echo "  sudo mv $PROGRAM_DIR $PROGRAM_DIR.failed && sudo mv $PROGRAM_DIR.previous $PROGRAM_DIR"
    echo "  sudo quoting restore --force $update_backup"
    echo "  $start"
    echo "Or fix the cause and run the update again (it takes a new backup first)."
  } >&2
  exit 1
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
    [ -z "$(backup_schedule)" ] || system systemctl enable --now quoting-backup.timer
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
  if [ "$staged" = 1 ] && [ "$update" = 0 ]; then
    note "skipped (--root): nothing was started"
    return 0
  fi
  if [ "$dry_run" = 1 ]; then
    echo "    would run: quoting doctor"
    return 0
  fi
  if [ "$update" = 0 ]; then
    quoting doctor
  else
    quoting doctor || rollback_help "quoting doctor found a failure (above) after the update"
  fi
}

do_uninstall() {
  step "Removing Quoting"
  if [ "$staged" = 0 ] && [ "$(id -u)" != 0 ]; then die "run as root"; fi
  if [ "$staged" = 0 ] && command -v systemctl > /dev/null 2>&1 && systemd_running; then
    local unit
    for unit in quoting-backup.timer quoting-worker.timer quoting-worker.service quoting.service; do
      [ ! -e "$UNIT_DIR/$unit" ] || run systemctl disable --now "$unit" || true
    done
  fi
  local database_url
  database_url=$(env_value DATABASE_URL)
  run rm -rf "$root$PROGRAM_DIR" "$root$PROGRAM_DIR.new" "$root$PROGRAM_DIR.old" "$root$PROGRAM_DIR.previous" "$root$WRAPPER" "$root$CRON_FILE" \
    "$root$UNIT_DIR/quoting.service" "$root$UNIT_DIR/quoting-worker.service" "$root$UNIT_DIR/quoting-worker.timer" \
    "$root$UNIT_DIR/quoting-backup.service" "$root$UNIT_DIR/quoting-backup.timer" "$root$BACKUP_CRON_FILE"
  [ "$staged" = 1 ] || ! systemd_running || run systemctl daemon-reload
  if [ "$purge" = 0 ]; then
    note "kept $CONFIG_DIR and $DATA_DIR${database_url:+ and the PostgreSQL database}; remove them with --uninstall --purge"
    [ ! -f "$root$CADDY_DIR/quoting.caddy" ] || note "kept the Caddy site $CADDY_DIR/quoting.caddy (--purge removes it)"
    return 0
  fi
  remove_proxy
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

# --purge: the Caddy site goes, and so does the Caddyfile's import of it (Caddy refuses to load an import that is
# missing); the Caddyfile's other lines and the caddy package stay.
remove_proxy() {
  local caddyfile="$root$CADDY_DIR/Caddyfile"
  [ -f "$root$CADDY_DIR/quoting.caddy" ] || return 0
  step "Removing the Caddy site"
  run rm -f "$root$CADDY_DIR/quoting.caddy"
  if [ -f "$caddyfile" ] && grep -qx 'import quoting.caddy' "$caddyfile"; then
    if [ "$dry_run" = 1 ]; then
      echo "    would remove 'import quoting.caddy' from $CADDY_DIR/Caddyfile"
    else
      sed -i -e '/^import quoting\.caddy$/d' -e '/^# Quoting (added by install.sh --domain)$/d' "$caddyfile"
      note "removed 'import quoting.caddy' from $CADDY_DIR/Caddyfile"
    fi
  fi
  if [ "$staged" = 0 ] && systemd_running && systemctl is-active --quiet caddy.service; then run systemctl reload caddy.service || true; fi
}

main() {
  if [ "$uninstall" = 1 ]; then
    do_uninstall
    return 0
  fi
  check_os
  # What would stop the install comes first, before anything is changed.
  [ "$update" = 0 ] || check_update
  check_postgres
  check_embedded_data
  check_caddy
  check_node
  check_backup_schedule
  create_user
  create_dirs
  install_program
  setup_postgres
  restore_backup
  write_env_file
  write_wrapper
  write_units
  write_backup_units
  write_proxy
  stop_service
  [ "$update" = 0 ] || take_backup
  [ "$dry_run" = 1 ] || switch_program
  if [ "$staged" = 1 ] && [ "$update" = 0 ]; then
    step "Applying database migrations"
    note "skipped (--root): nothing is started"
  else
    migrate
  fi
  start_services
  start_proxy
  run_doctor
}

node_bin='' npm_bin='' source_dir='' work='' db_password='' database_url='' new_program_ready=0 program_replaced=0
trap '[ -z "$work" ] || rm -rf "$work"' EXIT
# Sourced (as the tests do, to run one step), it only defines its functions.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then main; fi
