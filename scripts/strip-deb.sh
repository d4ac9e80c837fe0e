#!/usr/bin/env bash
# Strips the binaries inside a .deb (the release profile keeps line tables for profiling,
# which makes them ten times larger) and repacks it with fresh md5sums and size.
set -euo pipefail
DEB=$1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
dpkg-deb -R "$DEB" "$WORK/pkg"
strip "$WORK"/pkg/usr/bin/*
(cd "$WORK/pkg" && find usr -type f -exec md5sum {} + > DEBIAN/md5sums)
SIZE=$(du -sk --exclude=DEBIAN "$WORK/pkg" | cut -f1)
sed -i "s/^Installed-Size: .*/Installed-Size: $SIZE/" "$WORK/pkg/DEBIAN/control"
dpkg-deb --root-owner-group -Zxz -b "$WORK/pkg" "$DEB" >/dev/null
ls -l "$DEB"
