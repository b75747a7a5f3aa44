#!/usr/bin/env bash
# app.sh start|stop runs one instance of the example app: Debian's haproxy
# answering every request itself with its version (body "v2", header
# X-Version), ERROR_PERCENT of them with a 500 (exactly: every request whose
# count times the percent crosses a hundred), and Prometheus metrics at
# /metrics (its built-in exporter: haproxy_frontend_http_requests_total,
# haproxy_frontend_http_responses_total{code="5xx"}, ...).
#
# Environment: STATE (this instance's folder: its config, pid file, port and
# address), VERSION, ERROR_PERCENT (0-100), TARGETS (optional: a folder of
# Prometheus file_sd targets; the instance adds itself there with the labels
# version and component=COMPONENT). It listens on a free port of 127.0.0.1,
# the one it had before when that is free, and prints nothing: its address
# is in $STATE/addr.
set -euo pipefail
: "${STATE:?}" "${VERSION:?}"
ERROR_PERCENT=${ERROR_PERCENT:-0}
haproxy=$(command -v haproxy || echo /usr/sbin/haproxy)

stop() {
  if [ -f "$STATE/pid" ]; then
    local pid i
    pid=$(cat "$STATE/pid")
    kill "$pid" 2>/dev/null || true
    # Gone before its port is taken again.
    for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    rm -f "$STATE/pid"
  fi
  if [ -n "${TARGETS:-}" ]; then rm -f "$TARGETS/$(basename "$STATE").json"; fi
}

config() {
  cat <<CFG
global
  nbthread 1
  maxconn 512
defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s
frontend app
  bind 127.0.0.1:$1
  http-request use-service prometheus-exporter if { path /metrics }
  http-request track-sc0 int(1) table requests
  http-request return status 500 content-type text/plain string "$VERSION error\n" hdr X-Version "$VERSION" if { sc0_http_req_cnt,mul($ERROR_PERCENT),mod(100) lt $ERROR_PERCENT }
  http-request return status 200 content-type text/plain string "$VERSION\n" hdr X-Version "$VERSION"
backend requests
  stick-table type integer size 1 store http_req_cnt
CFG
}

start() {
  mkdir -p "$STATE"
  stop
  local port attempt
  port=$(cat "$STATE/port" 2>/dev/null || echo $((20000 + RANDOM % 40000)))
  # A port another process holds fails the bind: try another.
  for attempt in $(seq 1 20); do
    config "$port" >"$STATE/haproxy.cfg"
    if "$haproxy" -D -q -f "$STATE/haproxy.cfg" -p "$STATE/pid" 2>"$STATE/log"; then
      echo "$port" >"$STATE/port"
      echo "127.0.0.1:$port" >"$STATE/addr"
      register "$port"
      return
    fi
    port=$((20000 + RANDOM % 40000))
  done
  cat "$STATE/log" >&2
  exit 1
}

register() {
  [ -n "${TARGETS:-}" ] || return 0
  mkdir -p "$TARGETS"
  local f="$TARGETS/$(basename "$STATE").json"
  printf '[{"targets": ["127.0.0.1:%s"], "labels": {"version": "%s", "component": "%s"}}]\n' \
    "$1" "$VERSION" "${COMPONENT:-app}" >"$f.tmp"
  mv "$f.tmp" "$f"
}

case ${1:-} in
start) start ;;
stop) stop ;;
*) echo "usage: app.sh start|stop" >&2; exit 2 ;;
esac
