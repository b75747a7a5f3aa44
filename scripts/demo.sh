#!/usr/bin/env bash
# demo.sh runs the example environment's whole lifecycle through knit:
# validate, graph, plan, apply, status, outputs, a no-op re-apply, teardown.
# Called by `make demo`; state goes to a throwaway data dir.
set -euo pipefail
env_file=${1:?usage: demo.sh ENVIRONMENT_FILE}
export KNIT_DATA_DIR=${KNIT_DATA_DIR:-$(mktemp -d -t knit-demo-XXXXXX)}
env_id=$(knit validate -f "$env_file" -o json | sed -n 's/.*"environment": "\(.*\)".*/\1/p')

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }
step knit version
step knit validate -f "$env_file"
step knit graph -f "$env_file"
step knit plan -f "$env_file"
step knit apply -f "$env_file"
step knit status "$env_id"
step knit output "$env_id"
step knit apply -f "$env_file"          # nothing changed: every component up to date, no tool runs
step knit drift "$env_id"                 # every component compared with reality: in sync, exit 0
step knit teardown "$env_id" --auto-approve
step knit status "$env_id"
step knit history "$env_id"
printf '\nstate kept in %s\n' "$KNIT_DATA_DIR"
