#!/usr/bin/env bash
# demo.sh runs the example environment through knit. Called by `make demo`.
set -euo pipefail
env_file=${1:?usage: demo.sh ENVIRONMENT_FILE}
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }
step knit version
step knit validate -f "$env_file"
step knit graph -f "$env_file"
