#!/usr/bin/env bash
# Builds, locally, the Docker images the tests need and tags them with the names production would
# pull: no image registry is reachable here, only Debian's package mirrors. Idempotent and cached:
# an image that exists is not rebuilt (ours carry a recipe label and are rebuilt only when their
# recipe changes; a same-named image that is not ours, e.g. a really pulled one, is left alone).
#
#   busybox:latest, busybox:1          FROM scratch + Debian's busybox-static (~2 MB, ~2 s)
#   slipway-test/debian:bookworm       debootstrap --variant=minbase bookworm | docker import (~1 min)
#     = debian:bookworm-slim
#   node:22-bookworm-slim              debian root + Debian's nodejs and npm (Node 18: a stand-in)
#   caddy:2                            debian root + Debian's caddy (2.6)
#   python:3.12-slim-bookworm          debian root + Debian's python3 (3.11), pip, venv
#
# The database images the platform pulls (src/domain/database-engines.ts), each on the debian root
# with a small entrypoint from test/provision/images/<item>/ that gives it the official image's data
# directory, env, user, command conventions and PID-1 server logging to the container's output:
#   postgres:17                        Debian's PostgreSQL 15 (postgresql-15). /var/lib/postgresql/data;
#     = timescale/timescaledb:latest-pg17  POSTGRES_DB/USER/PASSWORD, scram-sha-256 from any host, 5432;
#                                      `postgres -c wal_level=logical` as the command works. The
#                                      timescale name is the same image: Debian has no TimescaleDB.
#   mysql:8.4                          Debian's MariaDB 10.11 (mariadb-server-core, -client-core: the
#                                      `mysql` client; mariadb-client: `mysqldump`, as the official
#                                      image has both). /var/lib/mysql; MYSQL_DATABASE/USER/PASSWORD/
#                                      ROOT_PASSWORD, users from any host ('%'), utf8mb4, 3306.
#   redis:7                            Debian's Redis 7.0. WORKDIR /data, `sh` and `redis-server` on
#                                      PATH (the platform's `sh -c 'exec redis-server ...'`), every
#                                      interface, protected mode off, 6379.
#   clickhouse/clickhouse-server:24    Debian's ClickHouse 18.16 (old: no SQL users, fewer functions).
#                                      /var/lib/clickhouse; CLICKHOUSE_DB/USER/PASSWORD (a users.d/ file
#                                      written at start; ..._DEFAULT_ACCESS_MANAGEMENT has no effect),
#                                      HTTP 8123 and native 9000 on every interface.
#   mongo:7                            a MongoDB wire-protocol stand-in in Node (test/standins/mongo-wire,
#                                      with node_modules/bson, in /opt/mongo-wire) on Debian's nodejs
#                                      (18): `mongod` runs `node server.mjs --port 27017 --dbpath /data/db
#                                      --bind_ip_all`; MONGO_INITDB_ROOT_USERNAME/PASSWORD. `mongodump` and
#                                      `mongorestore` are stand-ins too (tools.mjs: --archive only, the
#                                      wire protocol to the server), as the official image has the tools.
#
# The storage instances' server (src/domain/storage-server.ts), the same way:
#   versity/versitygw:v1.8.0           an S3 stand-in in Node (test/standins/s3-server: s3rver from npm
#                                      behind a front door checking AWS SigV4 against the key pair), on
#                                      Debian's nodejs (18), in /opt/s3-server with s3rver's dependencies
#                                      from the repo's node_modules. versitygw's conventions: the entrypoint
#                                      runs `versitygw ARGS` (`posix /data`), ROOT_ACCESS_KEY/ROOT_SECRET_KEY,
#                                      VGW_PORT (:7070), VGW_REGION; refuses to start without a key pair.
#
# The image registry the platform runs for a cluster (issue 31), the same way:
#   registry:2                         Debian's docker-registry (the Distribution registry 2.8, as the
#                                      official image), `registry` on PATH, the official image's config
#                                      (/etc/docker/registry/config.yml: filesystem storage in
#                                      /var/lib/registry, :5000) and entrypoint: REGISTRY_* variables
#                                      configure it (htpasswd auth, TLS, deletes), `registry
#                                      garbage-collect CONFIG` collects. No htpasswd tool, as there.
#
# SLIPWAY_TEST_IMAGES: comma-separated subset of busybox,debian,node,caddy,python,postgres,timescale,
#   mysql,redis,clickhouse,mongo,storage,registry, or "all" (the same as `images.sh --all`: every image above)
#   (default busybox,debian,node,caddy). SLIPWAY_TEST_IMAGES_REBUILD=1 rebuilds our images anyway.
# SLIPWAY_DEBIAN_MIRROR / SLIPWAY_DEBIAN_SECURITY_MIRROR override the mirrors read from the host's
# apt sources. Prints what it does, timings and sizes to stderr; fails loudly when it cannot.
set -euo pipefail

KNOWN=busybox,debian,node,caddy,python,postgres,timescale,mysql,redis,clickhouse,mongo,storage,registry
case ${1:-} in
  --all) SLIPWAY_TEST_IMAGES=all ;;
  "") ;;
  *) echo "usage: images.sh [--all]  (or SLIPWAY_TEST_IMAGES=item,item...; known: $KNOWN)" >&2; exit 2 ;;
esac
RECIPE_LABEL=org.slipway.test.recipe
WANTED=${SLIPWAY_TEST_IMAGES:-busybox,debian,node,caddy}
[ "$WANTED" = all ] && WANTED=$KNOWN
WANTED=",$WANTED,"
REBUILD=${SLIPWAY_TEST_IMAGES_REBUILD:-0}
LOCK=${SLIPWAY_TEST_IMAGES_LOCK:-/tmp/slipway-test-images.lock}
SUPERSEDED=${LOCK%.lock}.superseded # IDs of our replaced images still in use when replaced
PROVISION_DIR=$(cd "$(dirname "$0")" && pwd)
REPO_DIR=$(cd "$PROVISION_DIR/../.." && pwd)

log() { echo "images: $*" >&2; }
die() { echo "images: ERROR: $*" >&2; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
wants() { [[ $WANTED == *",$1,"* ]]; }

for item in ${WANTED//,/ }; do
  [[ ",$KNOWN," == *",$item,"* ]] || die "unknown image '$item' in SLIPWAY_TEST_IMAGES (known: $KNOWN, or all)"
done

# A Docker engine first (installs/starts dockerd when missing).
bash "$PROVISION_DIR/docker.sh" || die "no Docker engine (test/provision/docker.sh failed)"

# One provisioner at a time: parallel test files may all call this script.
exec 9>"$LOCK"
if ! flock -n 9; then
  log "another images.sh is running; waiting for it"
  flock 9
fi

WORK=$(mktemp -d /tmp/slipway-images.XXXXXX)
cleanup() {
  # debootstrap may leave bind mounts behind when interrupted: never delete through them.
  local m
  for m in $(awk -v d="$WORK/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r); do umount -l "$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$WORK" 2>/dev/null || true
}
trap cleanup EXIT

APT_UPDATED=0
host_install() { # host_install PACKAGE: apt-get installs the Debian package on the host unless installed
  local pkg=$1
  if [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" = "install ok installed" ]; then return 0; fi
  command -v apt-get >/dev/null || die "$pkg is missing and there is no apt-get to install it"
  if [ "$APT_UPDATED" = 0 ]; then
    log "apt-get update (host)"
    apt-get update -qq >"$WORK/apt-update.log" 2>&1 || { cat "$WORK/apt-update.log" >&2; die "apt-get update failed on the host"; }
    APT_UPDATED=1
  fi
  log "installing $pkg on the host (apt-get)"
  if ! DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 apt-get install -y -qq "$pkg" >"$WORK/apt-$pkg.log" 2>&1; then
    tail -n 20 "$WORK/apt-$pkg.log" >&2
    die "apt-get install $pkg failed on the host (log above)"
  fi
}

# --- helpers -------------------------------------------------------------------------------------
image_label() { docker image inspect --format "{{ index .Config.Labels \"$RECIPE_LABEL\" }}" "$1" 2>/dev/null | sed 's/^<no value>$//' || true; }
image_exists() { docker image inspect "$1" >/dev/null 2>&1; }
image_id() { docker image inspect --format '{{.Id}}' "$1"; }
sha() { sha256sum | cut -c1-16; }

# is_current RECIPE TAG...: true when every tag is ours with this recipe, or is a foreign image.
is_current() {
  local recipe=$1 tag label; shift
  [ "$REBUILD" = 1 ] && return 1
  for tag in "$@"; do
    image_exists "$tag" || return 1
    label=$(image_label "$tag")
    [ -z "$label" ] || [ "$label" = "$recipe" ] || return 1
  done
}

# tag_all SOURCE TAG...: tags SOURCE as each TAG unless that tag is a foreign image.
tag_all() {
  local src=$1 tag; shift
  for tag in "$@"; do
    if image_exists "$tag" && [ -z "$(image_label "$tag")" ]; then
      log "$tag exists and is not ours (a pulled image?): left alone"
      continue
    fi
    local old; old=$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
    docker tag "$src" "$tag"
    # The image this tag replaced: dropped once nothing names it (kept while a container or a
    # child image uses it; remembered, and retried by the sweep at the end of later runs).
    if [ -n "$old" ] && [ "$old" != "$(image_id "$tag")" ] && [ -z "$(docker image inspect --format '{{join .RepoTags ""}}' "$old" 2>/dev/null)" ]; then
      if docker rmi "$old" >/dev/null 2>&1; then log "removed the superseded image ${old#sha256:}"; else echo "$old" >>"$SUPERSEDED"; fi
    fi
  done
}

declare -a SUMMARY=()
record() { SUMMARY+=("$(printf '%-34s %-8s %6s s' "$1" "$2" "$3")"); }

# build_dockerfile NAME DOCKERFILE_TEXT TAG...: docker build in a temp context, cached by recipe.
build_dockerfile() {
  local name=$1 dockerfile=$2; shift 2
  local base recipe start ctx
  base=$(sed -n 's/^FROM[[:space:]]\+\([^[:space:]]\+\).*/\1/p;T;q' <<<"$dockerfile")
  [ "$base" = scratch ] || image_exists "$base" || die "$1: base image $base is missing"
  # The recipe covers the Dockerfile, the exact base image (a new base rebuilds the child) and
  # RECIPE_EXTRA (e.g. the hash of a file copied into the context).
  recipe=$( { printf '%s\n' "$dockerfile" "${RECIPE_EXTRA:-}"; [ "$base" = scratch ] || image_id "$base"; } | sha)
  if is_current "$recipe" "$@"; then
    log "$1: present (recipe $recipe), not rebuilt"
    record "$1" cached 0.0
    return 0
  fi
  start=$(now)
  ctx="$WORK/$name"
  mkdir -p "$ctx"
  printf '%s\n' "$dockerfile" >"$ctx/Dockerfile"
  [ -n "${CONTEXT_SETUP:-}" ] && "$CONTEXT_SETUP" "$ctx"
  log "$1: building (docker build, context $ctx)"
  if ! docker build --network host --label "$RECIPE_LABEL=$recipe" -t "slipway-test/$name:build" "$ctx" >"$WORK/$name.log" 2>&1; then
    tail -n 40 "$WORK/$name.log" >&2
    die "docker build of $1 failed (full log above, last 40 lines)"
  fi
  tag_all "slipway-test/$name:build" "$@"
  docker rmi "slipway-test/$name:build" >/dev/null
  local t; t=$(elapsed "$start")
  log "$1: built in $t s"
  record "$1" built "$t"
}

# --- busybox -------------------------------------------------------------------------------------
busybox_context() {
  local ctx=$1
  cp /bin/busybox "$ctx/busybox"
  mkdir -p "$ctx/etc"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n' >"$ctx/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$ctx/etc/group"
}
if wants busybox; then
  host_install busybox-static
  [ -x /bin/busybox ] || die "/bin/busybox is missing although busybox-static is installed"
  if ldd /bin/busybox >/dev/null 2>&1; then die "/bin/busybox is dynamically linked (the 'busybox' package?); busybox-static is needed"; fi
  applets=$(/bin/busybox --list) # not piped into grep -q: its early exit would SIGPIPE busybox under pipefail
  for applet in sh httpd echo sleep; do
    grep -qx "$applet" <<<"$applets" || die "Debian's busybox lacks the '$applet' applet"
  done
  CONTEXT_SETUP=busybox_context RECIPE_EXTRA=$(sha256sum </bin/busybox) build_dockerfile busybox "$(cat <<'EOF'
FROM scratch
COPY busybox /bin/busybox
COPY etc/ /etc/
RUN ["/bin/busybox", "mkdir", "-p", "/tmp", "/root", "/home", "/var/www", "/usr/bin", "/sbin", "/usr/sbin"]
RUN ["/bin/busybox", "--install", "-s", "/bin"]
RUN ["/bin/busybox", "chmod", "1777", "/tmp"]
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CMD ["sh"]
EOF
)" busybox:latest busybox:1
fi

# --- debian root ---------------------------------------------------------------------------------
# Prints "URI SUITE" for every enabled deb source of the host (one-line and deb822 formats).
host_sources() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } print $(i), $(i+1) }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'function flush() { if (deb && enabled) for (u in uris) for (s in suites) print uris[u], suites[s];
                           deb = 0; enabled = 1; delete uris; delete suites }
         BEGIN { enabled = 1 }
         /^[[:space:]]*$/ { flush(); next }
         /^#/ { next }
         tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
         tolower($1) == "enabled:" { enabled = ($2 != "no") }
         tolower($1) == "uris:" { for (i = 2; i <= NF; i++) uris[i] = $i }
         tolower($1) == "suites:" { for (i = 2; i <= NF; i++) suites[i] = $i }
         END { flush() }' "$f"
  done
}

# slim_root DIR: deletes docs, man pages and translations inside a debootstrapped root. Refuses any
# DIR that is not a fresh root under this script's temp dir, so it can never touch the host.
slim_root() {
  local root=$1
  case $root in "$WORK"/?*) ;; *) die "slim_root: refusing '$root' (not under $WORK)";; esac
  [ -f "$root/debootstrap/debootstrap.log" ] || [ -f "$root/etc/debian_version" ] || die "slim_root: '$root' is not a debootstrapped root"
  find "$root/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
  local d
  for d in man groff info lintian linda locale; do
    [ -d "$root/usr/share/$d" ] && find "$root/usr/share/$d" -mindepth 1 -delete
  done
  return 0
}

DEBIAN_TAG=slipway-test/debian:bookworm
ROOTFS_RECIPE=$(printf 'debootstrap minbase bookworm slim v2\n' | sha)
needs_debian() { local i; for i in debian node caddy python postgres timescale mysql redis clickhouse mongo storage registry; do wants "$i" && return 0; done; return 1; }

if needs_debian; then
  if is_current "$ROOTFS_RECIPE" "$DEBIAN_TAG"; then
    log "$DEBIAN_TAG: present (recipe $ROOTFS_RECIPE), not rebuilt"
    record "$DEBIAN_TAG" cached 0.0
  else
    start=$(now)
    host_install debootstrap
    SOURCES=$(host_sources)
    MIRROR=${SLIPWAY_DEBIAN_MIRROR:-$(awk '$2 == "bookworm" { print $1; exit }' <<<"$SOURCES")}
    # A host on another release: any mirror of its Debian archive also serves bookworm.
    [ -n "$MIRROR" ] || MIRROR=$(awk '$2 !~ /-security$/ && $1 ~ /\/debian\/?$/ { print $1; exit }' <<<"$SOURCES")
    [ -n "$MIRROR" ] || die "no Debian mirror found in /etc/apt/sources.list{,.d/*}; set SLIPWAY_DEBIAN_MIRROR"
    SECURITY=${SLIPWAY_DEBIAN_SECURITY_MIRROR:-$(awk '$2 == "bookworm-security" { print $1; exit }' <<<"$SOURCES")}
    SUITES=bookworm
    if awk -v m="$MIRROR" '$1 == m && $2 == "bookworm-updates" { found = 1 } END { exit !found }' <<<"$SOURCES"; then SUITES="bookworm bookworm-updates"; fi
    log "$DEBIAN_TAG: debootstrap --variant=minbase bookworm from $MIRROR (suites: $SUITES${SECURITY:+; security: $SECURITY})"

    ROOT="$WORK/rootfs"
    mkdir -p "$ROOT"
    if ! debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR" >"$WORK/debootstrap.log" 2>&1; then
      tail -n 30 "$WORK/debootstrap.log" >&2
      [ -f "$ROOT/debootstrap/debootstrap.log" ] && tail -n 30 "$ROOT/debootstrap/debootstrap.log" >&2
      die "debootstrap of bookworm from $MIRROR failed (log above)"
    fi
    # No bind mount may survive into the tarball.
    if awk -v d="$ROOT/" 'index($2, d) == 1 { found = 1 } END { exit !found }' /proc/mounts; then
      die "debootstrap left mounts under $ROOT: $(awk -v d="$ROOT/" 'index($2, d) == 1 { print $2 }' /proc/mounts | tr '\n' ' ')"
    fi

    # The image's apt sources: the same reachable mirrors the host uses.
    rm -f "$ROOT/etc/apt/sources.list"
    {
      printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$MIRROR" "$SUITES"
      if [ -n "$SECURITY" ]; then
        printf '\nTypes: deb\nURIs: %s\nSuites: bookworm-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$SECURITY"
      fi
    } >"$ROOT/etc/apt/sources.list.d/debian.sources"
    # What the official slim images do: no caches, no translations, no recommends kept around.
    cat >"$ROOT/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
EOF
    echo 'Acquire::Languages "none";' >"$ROOT/etc/apt/apt.conf.d/docker-no-languages"
    # Slim, as debian:*-slim is: no docs, man pages or translations, now or from later installs.
    printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
      'path-exclude /usr/share/man/*' 'path-exclude /usr/share/groff/*' 'path-exclude /usr/share/info/*' \
      'path-exclude /usr/share/lintian/*' 'path-exclude /usr/share/linda/*' 'path-exclude /usr/share/locale/*' \
      >"$ROOT/etc/dpkg/dpkg.cfg.d/docker-slim"
    slim_root "$ROOT"
    rm -rf "$ROOT/var/lib/apt/lists/"* "$ROOT/var/cache/apt/"*.bin "$ROOT/var/cache/apt/archives/"*.deb \
      "$ROOT/var/log/"*.log "$ROOT/var/log/apt/"* "$ROOT/etc/hostname" "$ROOT/etc/resolv.conf"
    : >"$ROOT/etc/resolv.conf"

    log "$DEBIAN_TAG: docker import ($(du -sh --one-file-system "$ROOT" | cut -f1) rootfs)"
    tar --numeric-owner --one-file-system -C "$ROOT" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -c . |
      docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["bash"]' \
        --change "LABEL $RECIPE_LABEL=$ROOTFS_RECIPE" \
        --message "debootstrap --variant=minbase bookworm ($MIRROR)" \
        - "$DEBIAN_TAG" >/dev/null || die "docker import of the bookworm root failed"
    rm -rf --one-file-system "$ROOT"
    t=$(elapsed "$start")
    log "$DEBIAN_TAG: built in $t s"
    record "$DEBIAN_TAG" built "$t"
  fi
  tag_all "$DEBIAN_TAG" debian:bookworm-slim
fi

# --- images on the debian root --------------------------------------------------------------------
if wants node; then
  build_dockerfile node "$(cat <<EOF
FROM $DEBIAN_TAG
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs npm ca-certificates \\
 && rm -rf /var/lib/apt/lists/* \\
 && node --version && npm --version
CMD ["node"]
EOF
)" node:22-bookworm-slim
fi

if wants caddy; then
  # Laid out like the official image: config under /config, state under /data, site root /srv.
  build_dockerfile caddy "$(cat <<EOF
FROM $DEBIAN_TAG
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends caddy ca-certificates \\
 && rm -rf /var/lib/apt/lists/* \\
 && mkdir -p /config/caddy /data/caddy /srv \\
 && caddy version
ENV XDG_CONFIG_HOME=/config XDG_DATA_HOME=/data
WORKDIR /srv
EXPOSE 80 443 2019
CMD ["caddy", "run", "--config", "/etc/caddy/Caddyfile", "--adapter", "caddyfile"]
EOF
)" caddy:2
fi

if wants python; then
  # Debian marks its Python "externally managed" (PEP 668); the official image does not: so pip
  # install works here as it does there.
  build_dockerfile python "$(cat <<EOF
FROM $DEBIAN_TAG
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-pip python3-venv python-is-python3 ca-certificates \\
 && rm -rf /var/lib/apt/lists/* \\
 && rm -f /usr/lib/python3*/EXTERNALLY-MANAGED \\
 && python --version && pip --version
CMD ["python3"]
EOF
)" python:3.12-slim-bookworm
fi

# --- database stand-ins ----------------------------------------------------------------------------
# Each from the debian root + Debian's server, with its files (entrypoint, config) from
# test/provision/images/<item>/ copied into the build context; their hash is part of the recipe.
STANDIN_DIR=$PROVISION_DIR/images
# tree_hash DIR...: one hash of the names, modes and contents of the files under each DIR (no node_modules/).
tree_hash() {
  local d
  for d in "$@"; do
    [ -d "$d" ] || die "tree_hash: $d is missing"
    (cd "$d" && find -L . -type f ! -path './node_modules/*' -printf '%m %p\n' | LC_ALL=C sort &&
      find -L . -type f ! -path './node_modules/*' -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum)
  done | sha
}
standin_context() { cp -a "$STANDIN_DIR/$STANDIN/." "$1/"; }
# Users as in the official images (the same UIDs, so a volume's files keep their owner either way).
# While packages install, no service may start (invoke-rc.d asks policy-rc.d).
APT_NO_START='printf "#!/bin/sh\nexit 101\n" >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d'
APT_INSTALL='DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends'

if wants postgres || wants timescale; then
  # postgresql-common first, to turn off the cluster Debian would create; the sample config listens
  # everywhere, so every initdb'd $PGDATA does, as in the official image.
  pg_tags=()
  wants postgres && pg_tags+=(postgres:17)
  wants timescale && pg_tags+=(timescale/timescaledb:latest-pg17)
  STANDIN=postgres CONTEXT_SETUP=standin_context RECIPE_EXTRA=$(tree_hash "$STANDIN_DIR/postgres") build_dockerfile postgres "$(cat <<EOF
FROM $DEBIAN_TAG
RUN groupadd -r postgres --gid=999 \\
 && useradd -r -g postgres --uid=999 --home-dir=/var/lib/postgresql --shell=/bin/bash postgres \\
 && mkdir -p /var/lib/postgresql && chown postgres:postgres /var/lib/postgresql \\
 && $APT_NO_START \\
 && apt-get update \\
 && $APT_INSTALL postgresql-common \\
 && sed -ri 's/#(create_main_cluster) .*\$/\\1 = false/' /etc/postgresql-common/createcluster.conf \\
 && $APT_INSTALL postgresql-15 \\
 && rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d \\
 && sed -ri "s!^#?(listen_addresses)\\s*=\\s*\\S+.*!\\1 = '*'!" /usr/share/postgresql/15/postgresql.conf.sample \\
 && grep -q "^listen_addresses = '\\*'" /usr/share/postgresql/15/postgresql.conf.sample \\
 && mkdir -p /var/run/postgresql /var/lib/postgresql/data /docker-entrypoint-initdb.d \\
 && chown postgres:postgres /var/run/postgresql /var/lib/postgresql/data \\
 && chmod 3777 /var/run/postgresql && chmod 700 /var/lib/postgresql/data \\
 && /usr/lib/postgresql/15/bin/postgres --version
ENV PATH=/usr/lib/postgresql/15/bin:\$PATH PGDATA=/var/lib/postgresql/data LANG=C.UTF-8
COPY docker-entrypoint.sh /usr/local/bin/
VOLUME /var/lib/postgresql/data
ENTRYPOINT ["docker-entrypoint.sh"]
STOPSIGNAL SIGINT
EXPOSE 5432
CMD ["postgres"]
EOF
)" "${pg_tags[@]}"
  # The timescale name is the postgres build (Debian has no TimescaleDB): one line for it too.
  if wants postgres && wants timescale; then record timescale/timescaledb:latest-pg17 "=pg:17" 0.0; fi
fi

if wants mysql; then
  # The server and the client cores: no perl, galera or mysqld_safe (the server runs as PID 1). The
  # datadir Debian's install leaves is emptied: the entrypoint initializes it on first start.
  STANDIN=mysql CONTEXT_SETUP=standin_context RECIPE_EXTRA=$(tree_hash "$STANDIN_DIR/mysql") build_dockerfile mysql "$(cat <<EOF
FROM $DEBIAN_TAG
RUN groupadd -r mysql --gid=999 \\
 && useradd -r -g mysql --uid=999 --home-dir=/var/lib/mysql --shell=/bin/false mysql \\
 && $APT_NO_START \\
 && apt-get update \\
 && $APT_INSTALL mariadb-server-core mariadb-client-core mariadb-client \\
 && rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d /var/lib/mysql \\
 && mkdir -p /var/lib/mysql /run/mysqld /docker-entrypoint-initdb.d \\
 && chown mysql:mysql /var/lib/mysql /run/mysqld && chmod 1777 /run/mysqld \\
 && mariadbd --version && mysqldump --version
COPY docker.cnf /etc/mysql/conf.d/docker.cnf
COPY docker-entrypoint.sh /usr/local/bin/
VOLUME /var/lib/mysql
ENTRYPOINT ["docker-entrypoint.sh"]
EXPOSE 3306
CMD ["mysqld"]
EOF
)" mysql:8.4
fi

if wants redis; then
  STANDIN=redis CONTEXT_SETUP=standin_context RECIPE_EXTRA=$(tree_hash "$STANDIN_DIR/redis") build_dockerfile redis "$(cat <<EOF
FROM $DEBIAN_TAG
RUN groupadd -r redis --gid=999 \\
 && useradd -r -g redis --uid=999 --home-dir=/var/lib/redis --shell=/usr/sbin/nologin redis \\
 && $APT_NO_START \\
 && apt-get update \\
 && $APT_INSTALL redis-server \\
 && rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d \\
 && mkdir -p /data && chown redis:redis /data \\
 && redis-server --version
COPY docker-entrypoint.sh redis-server /usr/local/bin/
VOLUME /data
WORKDIR /data
ENTRYPOINT ["docker-entrypoint.sh"]
EXPOSE 6379
CMD ["redis-server"]
EOF
)" redis:7
fi

if wants clickhouse; then
  # bookworm still has ClickHouse (18.16, Debian's last); clickhouse-client for the entrypoint's
  # init and for `docker exec ... clickhouse-client`, as in the official image.
  STANDIN=clickhouse CONTEXT_SETUP=standin_context RECIPE_EXTRA=$(tree_hash "$STANDIN_DIR/clickhouse") build_dockerfile clickhouse "$(cat <<EOF
FROM $DEBIAN_TAG
RUN groupadd -r clickhouse --gid=101 \\
 && useradd -r -g clickhouse --uid=101 --home-dir=/var/lib/clickhouse --shell=/bin/bash clickhouse \\
 && $APT_NO_START \\
 && apt-get update \\
 && $APT_INSTALL clickhouse-server clickhouse-client \\
 && rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d \\
 && mkdir -p /var/lib/clickhouse /var/log/clickhouse-server /etc/clickhouse-server/config.d \\
      /etc/clickhouse-server/users.d /docker-entrypoint-initdb.d \\
 && chown clickhouse:clickhouse /var/lib/clickhouse /var/log/clickhouse-server \\
 && clickhouse-client --version
COPY docker.xml /etc/clickhouse-server/config.d/docker.xml
COPY entrypoint.sh /entrypoint.sh
VOLUME /var/lib/clickhouse
ENTRYPOINT ["/entrypoint.sh"]
EXPOSE 8123 9000 9009
EOF
)" clickhouse/clickhouse-server:24
fi

if wants mongo; then
  MONGO_WIRE=$REPO_DIR/test/standins/mongo-wire
  BSON_DIR=$REPO_DIR/node_modules/bson
  [ -f "$MONGO_WIRE/server.mjs" ] || die "mongo: $MONGO_WIRE/server.mjs is missing"
  [ -f "$BSON_DIR/package.json" ] || die "mongo: $BSON_DIR is missing (npm ci first)"
  # The server's files (not a node_modules/ of its own) and the repo's bson beside them.
  mongo_context() {
    standin_context "$1"
    mkdir -p "$1/mongo-wire/node_modules"
    tar -C "$MONGO_WIRE" --exclude=./node_modules -cf - . | tar -C "$1/mongo-wire" -xf -
    cp -rL "$BSON_DIR" "$1/mongo-wire/node_modules/bson"
  }
  STANDIN=mongo CONTEXT_SETUP=mongo_context RECIPE_EXTRA=$(tree_hash "$STANDIN_DIR/mongo" "$MONGO_WIRE" "$BSON_DIR") build_dockerfile mongo "$(cat <<EOF
FROM $DEBIAN_TAG
RUN groupadd -r mongodb --gid=999 \\
 && useradd -r -g mongodb --uid=999 --home-dir=/data/db --shell=/bin/bash mongodb \\
 && apt-get update \\
 && $APT_INSTALL nodejs \\
 && rm -rf /var/lib/apt/lists/* \\
 && mkdir -p /data/db /data/configdb /docker-entrypoint-initdb.d \\
 && chown mongodb:mongodb /data/db /data/configdb \\
 && node --version
COPY mongo-wire/ /opt/mongo-wire/
COPY docker-entrypoint.sh mongod mongodump mongorestore /usr/local/bin/
VOLUME /data/db /data/configdb
ENTRYPOINT ["docker-entrypoint.sh"]
EXPOSE 27017
CMD ["mongod"]
EOF
)" mongo:7
fi

if wants storage; then
  S3_SERVER=$REPO_DIR/test/standins/s3-server
  [ -f "$S3_SERVER/server.mjs" ] || die "storage: $S3_SERVER/server.mjs is missing"
  [ -f "$REPO_DIR/node_modules/s3rver/package.json" ] || die "storage: $REPO_DIR/node_modules/s3rver is missing (npm ci first)"
  command -v node >/dev/null || die "storage: node is needed to list s3rver's dependencies"
  # s3rver and its runtime dependencies, as npm laid them out under node_modules/ (paths kept, so
  # Node resolves them in the image as it does here).
  S3RVER_DEPS=$(cd "$REPO_DIR" && node -e '
    const fs = require("fs"), path = require("path");
    const seen = new Set();
    const visit = (dir) => {
      if (seen.has(dir)) return;
      seen.add(dir);
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
      for (const name of Object.keys(pkg.dependencies || {})) {
        let at = dir, found = null;
        for (;;) {
          const candidate = path.join(at, "node_modules", name);
          if (fs.existsSync(path.join(candidate, "package.json"))) { found = candidate; break; }
          const up = path.dirname(at);
          if (up === at) break;
          at = up;
        }
        if (!found) throw new Error(`${name} (a dependency of ${dir}) is not installed`);
        visit(found);
      }
    };
    visit(path.resolve("node_modules/s3rver"));
    console.log([...seen].map((d) => path.relative(process.cwd(), d)).sort().join("\n"));
  ') || die "storage: could not list s3rver's dependencies"
  storage_context() {
    standin_context "$1"
    mkdir -p "$1/s3-server"
    cp "$S3_SERVER/server.mjs" "$1/s3-server/"
    local dep
    while IFS= read -r dep; do
      mkdir -p "$1/s3-server/$(dirname "$dep")"
      cp -rL "$REPO_DIR/$dep" "$1/s3-server/$dep"
    done <<<"$S3RVER_DEPS"
  }
  STANDIN=storage CONTEXT_SETUP=storage_context RECIPE_EXTRA=$( { tree_hash "$STANDIN_DIR/storage" "$S3_SERVER"; printf '%s\n' "$S3RVER_DEPS"; cat "$REPO_DIR/node_modules/s3rver/package.json"; } | sha) build_dockerfile storage "$(cat <<EOF
FROM $DEBIAN_TAG
RUN apt-get update \\
 && $APT_INSTALL nodejs \\
 && rm -rf /var/lib/apt/lists/* \\
 && mkdir -p /data /app \\
 && node --version
COPY s3-server/ /opt/s3-server/
COPY docker-entrypoint.sh versitygw /usr/local/bin/
RUN ln -s /usr/local/bin/versitygw /app/versitygw \\
 && cd /opt/s3-server && node -e 'require("s3rver")'
ENTRYPOINT ["docker-entrypoint.sh"]
EXPOSE 7070
EOF
)" versity/versitygw:v1.8.0
fi

if wants registry; then
  STANDIN=registry CONTEXT_SETUP=standin_context RECIPE_EXTRA=$(tree_hash "$STANDIN_DIR/registry") build_dockerfile registry "$(cat <<EOF
FROM $DEBIAN_TAG
RUN $APT_NO_START \\
 && apt-get update \\
 && $APT_INSTALL docker-registry \\
 && rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d \\
 && ln -s docker-registry /usr/bin/registry \\
 && mkdir -p /var/lib/registry \\
 && registry --version
COPY config.yml /etc/docker/registry/config.yml
COPY entrypoint.sh /entrypoint.sh
VOLUME /var/lib/registry
EXPOSE 5000
ENTRYPOINT ["/entrypoint.sh"]
CMD ["/etc/docker/registry/config.yml"]
EOF
)" registry:2
fi

# --- sweep: images of ours superseded earlier, once nothing names or uses them --------------------
# (Only IDs this script replaced: images built FROM ours inherit our label and are not ours.)
if [ -s "$SUPERSEDED" ]; then
  for id in $(sort -u "$SUPERSEDED"); do
    if ! image_exists "$id"; then continue; fi
    if [ -z "$(docker image inspect --format '{{join .RepoTags ""}}' "$id")" ] && docker rmi "$id" >/dev/null 2>&1; then
      log "removed the superseded image ${id#sha256:}"
    elif [ -z "$(docker image inspect --format '{{join .RepoTags ""}}' "$id")" ]; then
      echo "$id" >>"$WORK/superseded"
    fi
  done
  mv "$WORK/superseded" "$SUPERSEDED" 2>/dev/null || : >"$SUPERSEDED"
fi

# --- summary --------------------------------------------------------------------------------------
log "summary (image, built/cached, seconds, size):"
for line in "${SUMMARY[@]}"; do
  tag=$(awk '{ print $1 }' <<<"$line")
  size=$(docker image inspect --format '{{.Size}}' "$tag" | awk '{ printf "%.1f MB", $1 / 1e6 }')
  log "  $line  $size"
done
