#!/usr/bin/env bash
# web-assets.sh refreshes the dashboard's third-party browser files in
# internal/web/static/vendor/ from the npm registry, at the exact versions
# below, and rewrites VERSIONS with each file's SHA-256. `go build` never
# runs this: the files are committed, and a test checks them against
# VERSIONS. Run it by hand after changing a version; needs npm and tar.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/internal/web/static/vendor"

# package@version  file-in-package  name-in-vendor
assets=(
  "htmx.org@2.0.11       package/dist/htmx.min.js    htmx.min.js"
  "htmx-ext-sse@2.2.4    package/dist/sse.min.js     htmx-ext-sse.min.js"
  "axe-core@4.14.1       package/axe.min.js          axe.min.js"
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$dest"
{
  echo "# Vendored browser files: package@version, file, sha256. Written by scripts/web-assets.sh."
  echo "# A test (internal/web vendor_test.go) checks every file in this folder against this list."
} >"$work/VERSIONS"
for line in "${assets[@]}"; do
  read -r pkg file name <<<"$line"
  (cd "$work" && npm pack --silent "$pkg" >/dev/null)
  tgz=$(ls -t "$work"/*.tgz | head -1)
  tar -xzf "$tgz" -C "$work" "$file" package/LICENSE
  mv "$work/$file" "$dest/$name"
  mv "$work/package/LICENSE" "$dest/$name.LICENSE"
  rm -rf "$work/package" "$tgz"
  for f in "$name" "$name.LICENSE"; do
    echo "$pkg $f $(sha256sum "$dest/$f" | cut -d' ' -f1)" >>"$work/VERSIONS"
  done
  echo "web-assets: $pkg -> $name" >&2
done
mv "$work/VERSIONS" "$dest/VERSIONS"
