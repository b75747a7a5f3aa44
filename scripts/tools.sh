#!/usr/bin/env bash
# tools.sh installs every tool knit's demo and tests need into ./.tools, offline:
# OpenTofu built from the module source the Go module proxy serves, the real
# hashicorp/local provider laid out as a filesystem mirror, and a CLI config
# (.tools/tofurc) that points tofu at that mirror and nothing else.
# A second run finds everything in place and takes a second or two.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=versions.env
. "$root/scripts/versions.env"
tools="$root/.tools"
bin="$tools/bin"
mirror="$tools/mirror"
mkdir -p "$bin" "$mirror"

log() { echo "tools: $*" >&2; }

# A stamp file per tool records the version that was built, so a version bump
# in versions.env rebuilds and an unchanged one is a no-op.
up_to_date() { [ -x "$1" ] && [ -f "$1.version" ] && [ "$(cat "$1.version")" = "$2" ]; }

build_tofu() {
  local out="$bin/tofu" stamp="$TOFU_VERSION-r$TOOLS_REVISION"
  if up_to_date "$out" "$stamp"; then return; fi
  log "building OpenTofu $TOFU_VERSION from the module proxy (cold: ~4 min)"
  local dir src
  dir=$(go mod download -json "github.com/opentofu/opentofu@$TOFU_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -n "$dir" ] || { log "could not download opentofu $TOFU_VERSION"; exit 1; }
  # The module has a replace directive, so it must be the main module: build a writable copy.
  src="$tools/src/opentofu-$TOFU_VERSION"
  rm -rf "$src" && mkdir -p "$tools/src"
  cp -r "$dir" "$src" && chmod -R u+w "$src"
  # version.dev=no: a release build, as OpenTofu's own release process stamps it (not "-dev").
  (cd "$src" && go mod download && go build -trimpath -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" -o "$out.tmp" ./cmd/tofu)
  mv "$out.tmp" "$out"
  echo "$stamp" >"$out.version"
  rm -rf "$src"
}

build_provider_local() {
  local v="$PROVIDER_LOCAL_VERSION" name="terraform-provider-local_v$PROVIDER_LOCAL_VERSION"
  local out="$tools/providers/$name"
  if ! up_to_date "$out" "$v"; then
    log "building hashicorp/local $v from the module proxy"
    mkdir -p "$tools/providers"
    GOBIN="$tools/providers/tmp" go install "github.com/terraform-providers/terraform-provider-local@v$v"
    mv "$tools/providers/tmp/terraform-provider-local" "$out"
    rmdir "$tools/providers/tmp"
    echo "$v" >"$out.version"
  fi
  # Unpacked filesystem mirror layout, under both registries so tofu and terraform find it.
  local reg
  for reg in registry.opentofu.org registry.terraform.io; do
    local d="$mirror/$reg/hashicorp/local/$v/linux_amd64"
    mkdir -p "$d"
    ln -f "$out" "$d/$name" 2>/dev/null || cp "$out" "$d/$name"
  done
}

write_cli_config() {
  cat >"$tools/tofurc.tmp" <<CFG
# Written by scripts/tools.sh: install providers from the local mirror only.
provider_installation {
  filesystem_mirror {
    path = "$mirror"
  }
}
CFG
  mv "$tools/tofurc.tmp" "$tools/tofurc"
}

build_tofu
build_provider_local
write_cli_config
log "ready: $bin/tofu ($TOFU_VERSION), hashicorp/local $PROVIDER_LOCAL_VERSION in $mirror"
