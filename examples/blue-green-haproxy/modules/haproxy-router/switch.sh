#!/usr/bin/env bash
# switch.sh apply|stop runs the example's blue/green router: Debian's
# haproxy with two frontends, live (every request to the ACTIVE color) and
# preview (every request to the other one, where a new color is checked
# before any live request reaches it). apply starts haproxy when it is not
# running; else it changes the running one through its runtime API (the
# admin socket $STATE/admin.sock, mode 600, through socat), without a
# reload: the servers' addresses (`set server … addr`), then the new
# active color's weight and state ready before the old one's maint (`set
# server … weight`, `set server … state`), so no request finds no server.
# The config file is rewritten too, for the next start.
#
# Environment: STATE, PORT and PREVIEW_PORT (0: free ones, kept), BLUE and
# GREEN (HOST:PORT), ACTIVE (blue or green). Addresses: $STATE/addr,
# $STATE/preview_addr.
set -euo pipefail
: "${STATE:?}" "${BLUE:?}" "${GREEN:?}"
ACTIVE=${ACTIVE:-blue}
case $ACTIVE in blue) IDLE=green ;; green) IDLE=blue ;; *) echo "ACTIVE is blue or green, not $ACTIVE" >&2; exit 2 ;; esac
haproxy=$(command -v haproxy || echo /usr/sbin/haproxy)
socat=$(command -v socat || echo /usr/bin/socat)
sock=$STATE/admin.sock

running() { [ -f "$STATE/pid" ] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null; }

# server NAME ADDR BACKEND: a server line, disabled unless it serves that backend.
server() {
  local on=$ACTIVE
  [ "$3" = live ] || on=$IDLE
  if [ "$1" = "$on" ]; then echo "  server $1 $2 weight 100"; else echo "  server $1 $2 weight 0 disabled"; fi
}

config() {
  cat <<CFG
global
  nbthread 1
  maxconn 1024
  stats socket $sock mode 600 level admin
defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s
frontend live
  bind 127.0.0.1:$1
  default_backend live
frontend preview
  bind 127.0.0.1:$2
  default_backend preview
backend live
$(server blue "$BLUE" live)
$(server green "$GREEN" live)
backend preview
$(server blue "$BLUE" preview)
$(server green "$GREEN" preview)
CFG
}

# runtime sends commands to the admin socket and fails on any answer but
# the empty one (HAProxy answers a successful set with nothing, or with
# the notice of a changed address).
runtime() {
  local out
  out=$(printf '%s\n' "$1" | "$socat" -t 5 stdio "unix-connect:$sock")
  if printf '%s' "$out" | grep -v -e '^$' -e 'changed from' -e 'no need to change' >&2; then
    echo "haproxy runtime API refused: $1" >&2
    return 1
  fi
}

# addr NAME HOST:PORT: the runtime command that points server NAME of both backends at it.
addr() { echo "set server live/$1 addr ${2%:*} port ${2##*:}; set server preview/$1 addr ${2%:*} port ${2##*:}"; }

switch() {
  runtime "$(addr blue "$BLUE"); $(addr green "$GREEN")"
  # The new color serves before the old one stops: never no server.
  runtime "set server live/$ACTIVE weight 100; set server live/$ACTIVE state ready; set server live/$IDLE state maint; set server live/$IDLE weight 0"
  runtime "set server preview/$IDLE weight 100; set server preview/$IDLE state ready; set server preview/$ACTIVE state maint; set server preview/$ACTIVE weight 0"
}

apply() {
  mkdir -p "$STATE"
  local port preview attempt
  port=$(cat "$STATE/port" 2>/dev/null || echo "${PORT:-0}")
  preview=$(cat "$STATE/preview_port" 2>/dev/null || echo "${PREVIEW_PORT:-0}")
  if running; then
    config "$port" "$preview" >"$STATE/haproxy.cfg"
    switch
    return
  fi
  for attempt in $(seq 1 20); do
    [ "${PORT:-0}" != 0 ] || [ -f "$STATE/port" ] || port=$((20000 + RANDOM % 40000))
    [ "${PREVIEW_PORT:-0}" != 0 ] || [ -f "$STATE/preview_port" ] || preview=$((20000 + RANDOM % 40000))
    config "$port" "$preview" >"$STATE/haproxy.cfg"
    if "$haproxy" -D -q -f "$STATE/haproxy.cfg" -p "$STATE/pid" 2>"$STATE/log"; then
      echo "$port" >"$STATE/port"
      echo "$preview" >"$STATE/preview_port"
      echo "127.0.0.1:$port" >"$STATE/addr"
      echo "127.0.0.1:$preview" >"$STATE/preview_addr"
      return
    fi
    # Ports kept from before, or fixed ones, that are taken are an error.
    if [ -f "$STATE/port" ] || [ "${PORT:-0}" != 0 ]; then break; fi
  done
  cat "$STATE/log" >&2
  exit 1
}

stop() {
  running || return 0
  local pid i
  pid=$(cat "$STATE/pid")
  kill "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  rm -f "$STATE/pid"
}

case ${1:-} in
apply) apply ;;
stop) stop ;;
*) echo "usage: switch.sh apply|stop" >&2; exit 2 ;;
esac
