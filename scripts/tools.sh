#!/usr/bin/env bash
# tools.sh installs every tool knit's demo and tests need into ./.tools, offline:
# OpenTofu built from the module source the Go module proxy serves, the real
# hashicorp/local provider laid out as a filesystem mirror, and a CLI config
# (.tools/tofurc) that points tofu at that mirror and nothing else. For the
# Helm and manifests tests: etcd from Debian's etcd-server package, and
# kube-apiserver and kubectl built from the Go module proxy through the
# throwaway module in scripts/kube (its go.sum is committed, so the build
# needs nothing but the proxy). All three sit in .tools/kube, the folder
# envtest's KUBEBUILDER_ASSETS points at. For the Postgres store's tests:
# Debian's postgresql package (initdb, pg_ctl). For the OCI module tests:
# Debian's docker-registry package (the CNCF distribution registry). For the
# canary and blue/green tests and examples: Debian's nginx, haproxy,
# prometheus and socat (the client of HAProxy's runtime API socket).
# A second run finds everything in place and takes a second or two.
# `tools.sh terragrunt` builds only Terragrunt, the peer make bench compares
# knit with (no test needs it); `tools.sh demo` installs only what the demo
# runs: OpenTofu, the provider mirror and the CLI config.
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

# build_main builds package PKG of MODULE@VERSION into OUT, static and
# with LDFLAGS, stamped STAMP. It builds a writable copy of the module source
# the proxy serves as the main module: OpenTofu's and Terragrunt's go.mod
# have replace directives, and Go obeys only the main module's.
build_main() {
  local out=$1 stamp=$2 module=$3 pkg=$4 ldflags=$5
  if up_to_date "$out" "$stamp"; then return; fi
  log "building $module from the module proxy (cold: ~4 min)"
  local dir src="$tools/src/${module##*/}"
  dir=$(go mod download -json "$module" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -n "$dir" ] || { log "could not download $module"; exit 1; }
  rm -rf "$src" && mkdir -p "$tools/src"
  cp -r "$dir" "$src" && chmod -R u+w "$src"
  (cd "$src" && go mod download && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$out.tmp" "$pkg")
  mv "$out.tmp" "$out"
  echo "$stamp" >"$out.version"
  rm -rf "$src"
}

# build_tofu builds OpenTofu as its releases are: static (CGO_ENABLED=0 in
# its .goreleaser.yaml), so no dynamic loader runs at each of its many
# starts, and stamped a release build (version.dev=no, not "-dev").
build_tofu() {
  build_main "$bin/tofu" "$TOFU_VERSION-r$TOOLS_REVISION-static" "github.com/opentofu/opentofu@$TOFU_VERSION" \
    ./cmd/tofu "-X github.com/opentofu/opentofu/version.dev=no"
}

build_provider_local() {
  local v="$PROVIDER_LOCAL_VERSION" name="terraform-provider-local_v$PROVIDER_LOCAL_VERSION"
  local out="$tools/providers/$name" stamp="$PROVIDER_LOCAL_VERSION-static"
  if ! up_to_date "$out" "$stamp"; then
    log "building hashicorp/local $v from the module proxy"
    mkdir -p "$tools/providers"
    CGO_ENABLED=0 GOBIN="$tools/providers/tmp" go install "github.com/terraform-providers/terraform-provider-local@v$v"
    mv "$tools/providers/tmp/terraform-provider-local" "$out"
    rmdir "$tools/providers/tmp"
    echo "$stamp" >"$out.version"
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

# install_etcd links Debian's etcd into .tools/kube, installing the package
# only when no etcd is on the machine.
install_etcd() {
  local kube="$tools/kube"
  mkdir -p "$kube"
  if [ -x "$kube/etcd" ]; then return; fi
  local etcd
  etcd=$(command -v etcd || true)
  if [ -z "$etcd" ]; then
    log "installing etcd from Debian's etcd-server package"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    # Not kubernetes-client: its kubectl 1.20 conflicts with other kubectl packages.
    $sudo apt-get install -y --no-install-recommends etcd-server >/dev/null 2>&1 ||
      { $sudo apt-get update >/dev/null && $sudo apt-get install -y --no-install-recommends etcd-server >/dev/null; }
    etcd=$(command -v etcd)
  fi
  ln -sf "$etcd" "$kube/etcd"
}

# build_kube builds kube-apiserver and kubectl $KUBE_VERSION from the module
# proxy, through scripts/kube: a module requiring k8s.io/kubernetes whose
# staging modules are replaced by their published versions (or by stub
# folders for the nine the proxy lacks).
build_kube() {
  local kube="$tools/kube" stamp="$KUBE_VERSION-r$TOOLS_REVISION" minor
  mkdir -p "$kube"
  minor=${KUBE_VERSION#v1.}
  minor=${minor%%.*}
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  local cmd
  for cmd in kube-apiserver kubectl; do
    if up_to_date "$kube/$cmd" "$stamp"; then continue; fi
    log "building $cmd $KUBE_VERSION from the module proxy (cold: ~3 min)"
    (cd "$root/scripts/kube" && go build -trimpath -ldflags "$ldflags" -o "$kube/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd")
    mv "$kube/$cmd.tmp" "$kube/$cmd"
    echo "$stamp" >"$kube/$cmd.version"
  done
}

# Chromium for the dashboard's browser tests (internal/web): Debian's
# package, never a browser a test tool downloads. Installed only when missing.
install_chromium() {
  if command -v chromium >/dev/null 2>&1; then return; fi
  log "installing Debian's chromium for the browser tests"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
}

# install_postgres installs Debian's postgresql package when no initdb is
# on the machine: the Postgres store's tests start throwaway clusters with
# its initdb and pg_ctl (internal/testtools/pgtest finds them in
# /usr/lib/postgresql/*/bin, where Debian puts them, off PATH).
install_postgres() {
  if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || command -v initdb >/dev/null 2>&1; then return; fi
  log "installing Debian's postgresql for the Postgres store's tests"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends postgresql >/dev/null
}

# install_docker_registry installs Debian's docker-registry package when
# it is missing: the OCI module tests (internal/testtools/ocireg) start it
# on loopback themselves. The package's own service is not needed (and in
# a container never starts).
install_docker_registry() {
  if command -v docker-registry >/dev/null 2>&1; then return; fi
  log "installing Debian's docker-registry for the OCI module tests"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends docker-registry >/dev/null
}

# install_routers installs the Debian packages the canary and blue/green
# tests start on loopback themselves (internal/testtools/routertest) and the
# examples under examples/canary-nginx and examples/blue-green-haproxy run:
# nginx and haproxy (the routers; haproxy also serves the example app, with
# its built-in Prometheus exporter), prometheus (the analysis's metrics) and
# socat (scripts talk to HAProxy's runtime API socket through it). Only the
# missing ones are installed; their own services are not needed (the tests
# run each in a temporary folder, on ports of their own).
install_routers() {
  local pkgs=() tool
  for tool in nginx:/usr/sbin/nginx haproxy:/usr/sbin/haproxy prometheus:/usr/bin/prometheus socat:/usr/bin/socat; do
    if [ -x "${tool#*:}" ] || command -v "${tool%%:*}" >/dev/null 2>&1; then continue; fi
    pkgs+=("${tool%%:*}")
  done
  [ ${#pkgs[@]} -gt 0 ] || return 0
  log "installing Debian's ${pkgs[*]} for the canary and blue/green tests"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
}

# build_terragrunt builds Terragrunt as its Makefile does: static, version stamped.
build_terragrunt() {
  build_main "$bin/terragrunt" "$TERRAGRUNT_VERSION-r$TOOLS_REVISION" "github.com/gruntwork-io/terragrunt@$TERRAGRUNT_VERSION" \
    . "-X github.com/gruntwork-io/go-commons/version.Version=$TERRAGRUNT_VERSION"
}

if [ "${1:-}" = terragrunt ]; then
  build_terragrunt
  log "ready: $bin/terragrunt ($TERRAGRUNT_VERSION)"
  exit 0
fi

build_tofu
build_provider_local
write_cli_config
# `tools.sh demo`: only what make demo runs (OpenTofu and its provider); the
# Kubernetes binaries and Chromium are for the tests.
if [ "${1:-}" = demo ]; then
  log "ready: $bin/tofu ($TOFU_VERSION), hashicorp/local $PROVIDER_LOCAL_VERSION in $mirror"
  exit 0
fi
install_etcd
build_kube
install_chromium
install_postgres
install_docker_registry
install_routers
log "ready: $bin/tofu ($TOFU_VERSION), hashicorp/local $PROVIDER_LOCAL_VERSION in $mirror, etcd + kube-apiserver + kubectl $KUBE_VERSION in $tools/kube, docker-registry, nginx, haproxy, prometheus, socat"
