#!/usr/bin/env bash
# Copy a server-administration subset of Debian's PostgreSQL 15 HTML manual
# (package postgresql-doc-15) into a folder, to be ingested as a knowledge base:
#
#   scripts/postgres_kb.sh DIR && sextant ingest --kb KBDIR DIR
#
# DIR defaults to target/kb-src/postgresql. The subset is the one eval/postgresql.jsonl
# was written against (see eval/README.md); keep the list below in step with it.
set -euo pipefail

SRC=/usr/share/doc/postgresql-doc-15/html
DEST=${1:-target/kb-src/postgresql}

if [[ ! -d "$SRC" ]]; then
  echo "error: $SRC not found; install the manual first: apt-get install postgresql-doc-15" >&2
  exit 1
fi

# Explicit globs, relative to $SRC. Every pattern must match at least one file.
PATTERNS=(
  # Part III, server administration
  'runtime.html' 'server-start.html' 'server-shutdown.html' 'creating-cluster.html'
  'kernel-resources.html' 'upgrading.html' 'preventing-server-spoofing.html'
  'encryption-options.html' 'ssl-tcp.html' 'gssapi-enc.html' 'ssh-tunnels.html'
  'runtime-config*.html'
  'client-authentication*.html' 'auth-*.html'
  'user-manag.html' 'database-roles.html' 'role-*.html' 'predefined-roles.html'
  'managing-databases.html' 'manage-ag-*.html'
  'maintenance.html' 'routine-vacuuming.html' 'routine-reindex.html' 'logfile-maintenance.html'
  'backup.html' 'backup-dump.html' 'backup-file.html' 'continuous-archiving.html'
  'high-availability.html' 'different-replication-solutions.html' 'warm-standby*.html'
  'hot-standby.html'
  'monitoring.html' 'monitoring-ps.html' 'monitoring-stats.html' 'monitoring-locks.html'
  'progress-reporting.html' 'diskusage.html' 'disk-usage.html' 'disk-full.html'
  'wal.html' 'wal-*.html' 'checksums.html'
  'logical-replication*.html'
  # client-side connection files an operator edits
  'libpq-pgpass.html' 'libpq-pgservice.html' 'libpq-envars.html'
  # client and server applications (deprecated aliases and ecpg left out)
  'app-clusterdb.html' 'app-createdb.html' 'app-createuser.html' 'app-dropdb.html'
  'app-dropuser.html' 'app-initdb.html' 'app-pg-ctl.html' 'app-pg-dumpall.html'
  'app-pg-isready.html' 'app-pgamcheck.html' 'app-pgbasebackup.html'
  'app-pgchecksums.html' 'app-pgconfig.html' 'app-pgcontroldata.html' 'app-pgdump.html'
  'app-pgreceivewal.html' 'app-pgrecvlogical.html' 'app-pgresetwal.html'
  'app-pgrestore.html' 'app-pgrewind.html' 'app-pgverifybackup.html' 'app-postgres.html'
  'app-psql.html' 'app-reindexdb.html' 'app-vacuumdb.html' 'pgupgrade.html'
  # backup manifest format
  'backup-manifest-*.html'
  # contrib modules a DBA commonly loads
  'pgstatstatements.html' 'auto-explain.html' 'pgprewarm.html' 'pgstattuple.html'
)

mkdir -p "$DEST"
shopt -s nullglob
declare -A copied=()
for pat in "${PATTERNS[@]}"; do
  matches=("$SRC"/$pat)
  if (( ${#matches[@]} == 0 )); then
    echo "error: pattern '$pat' matched nothing in $SRC (different postgresql-doc-15 version?)" >&2
    exit 1
  fi
  for f in "${matches[@]}"; do
    cp -f "$f" "$DEST/"
    copied["$(basename "$f")"]=1
  done
done
echo "copied ${#copied[@]} files into $DEST"
