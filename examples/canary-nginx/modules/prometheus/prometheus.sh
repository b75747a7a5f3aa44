#!/usr/bin/env bash
# prometheus.sh start|stop runs the example's Prometheus: Debian's, with
# its data in $STATE, scraping every second the targets the app instances
# write into $TARGETS (file_sd: an instance that comes up is scraped within
# a second or two, one that goes away is dropped).
#
# Environment: STATE, TARGETS, PORT (0: a free one, kept across starts).
# It returns once Prometheus is ready; its address is in $STATE/addr.
set -euo pipefail
: "${STATE:?}" "${TARGETS:?}"
prometheus=$(command -v prometheus || echo /usr/bin/prometheus)

running() { [ -f "$STATE/pid" ] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null; }

config() {
  cat <<CFG
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: app
    file_sd_configs: [{files: ["$TARGETS/*.json"], refresh_interval: 1s}]
CFG
}

# ready reports whether /-/ready on 127.0.0.1:PORT answers 200.
ready() {
  { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
  printf 'GET /-/ready HTTP/1.0\r\n\r\n' >&3
  local status
  read -r _ status _ <&3 || true
  exec 3<&-
  [ "$status" = 200 ]
}

start() {
  mkdir -p "$STATE" "$TARGETS"
  running && return 0
  config >"$STATE/prometheus.yml"
  local port=${PORT:-0} attempt pid i
  [ "$port" != 0 ] || port=$(cat "$STATE/port" 2>/dev/null || echo $((20000 + RANDOM % 40000)))
  for attempt in $(seq 1 10); do
    # Its own session, every descriptor away from the caller's (tofu waits for them).
    setsid "$prometheus" --config.file="$STATE/prometheus.yml" --storage.tsdb.path="$STATE/data" \
      --web.listen-address="127.0.0.1:$port" --log.level=warn >"$STATE/log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$STATE/pid"
    for i in $(seq 1 600); do
      if ready "$port"; then
        echo "$port" >"$STATE/port"
        echo "127.0.0.1:$port" >"$STATE/addr"
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill "$pid" 2>/dev/null || true
    if [ "${PORT:-0}" != 0 ]; then break; fi
    port=$((20000 + RANDOM % 40000))
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
start) start ;;
stop) stop ;;
*) echo "usage: prometheus.sh start|stop" >&2; exit 2 ;;
esac
