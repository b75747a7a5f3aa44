#!/usr/bin/env bash
# nginx.sh apply|stop runs the example's router: Debian's nginx, in its own
# prefix folder (no root paths), sending CANARY_WEIGHT percent of the
# requests to CANARY and the rest to STABLE (weighted round robin: exact
# over every hundred requests). apply starts nginx when it is not running,
# else writes the new upstream file and reloads it (`nginx -s reload`:
# requests in flight finish on the old workers, none fails), and returns
# once the old workers are gone and the new ones answer.
#
# Environment: STATE (nginx's prefix: config, pid file, logs), PORT (0: a
# free one, kept across applies), STABLE and CANARY (HOST:PORT; the same
# address when no canary is up), CANARY_WEIGHT (0-100). The address it
# listens on is in $STATE/addr.
set -euo pipefail
: "${STATE:?}"
nginx=$(command -v nginx || echo /usr/sbin/nginx)

running() { [ -f "$STATE/nginx.pid" ] && kill -0 "$(cat "$STATE/nginx.pid")" 2>/dev/null; }
ctl() { "$nginx" -q -p "$STATE/" -c "$STATE/nginx.conf" -e "$STATE/error.log" "$@"; }

upstream() {
  local w=${CANARY_WEIGHT:?}
  echo "upstream app {"
  if [ "$STABLE" = "$CANARY" ] || [ "$w" -le 0 ]; then
    echo "  server $STABLE;"
  elif [ "$w" -ge 100 ]; then
    echo "  server $CANARY;"
  else
    echo "  server $STABLE weight=$((100 - w));"
    echo "  server $CANARY weight=$w;"
  fi
  echo "  keepalive 16;"
  echo "}"
}

config() {
  cat <<CFG
daemon on;
worker_processes 1;
pid $STATE/nginx.pid;
error_log $STATE/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $STATE/tmp/body;
  proxy_temp_path $STATE/tmp/proxy;
  fastcgi_temp_path $STATE/tmp/fastcgi;
  uwsgi_temp_path $STATE/tmp/uwsgi;
  scgi_temp_path $STATE/tmp/scgi;
  include $STATE/upstream.conf;
  server {
    listen 127.0.0.1:$1;
    # The generation of the upstream file the answering worker loaded.
    location = /_router/generation { return 200 "\$generation\n"; }
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
  include $STATE/generation.conf;
}
CFG
}

# write_upstream writes the upstream file, and the generation it is.
write_upstream() {
  local gen=$(($(cat "$STATE/generation" 2>/dev/null || echo 0) + 1))
  upstream >"$STATE/upstream.conf.tmp" && mv "$STATE/upstream.conf.tmp" "$STATE/upstream.conf"
  echo "map \$host \$generation { default $gen; }" >"$STATE/generation.conf"
  echo "$gen" >"$STATE/generation"
}

# wait_generation returns once a new connection is answered by a worker
# that loaded the current generation.
wait_generation() {
  local gen port i got
  gen=$(cat "$STATE/generation")
  port=$(cat "$STATE/port")
  for i in $(seq 1 200); do
    got=$(get "$port" /_router/generation || true)
    [ "$got" = "$gen" ] && return 0
    sleep 0.05
  done
  echo "nginx did not load generation $gen" >&2
  cat "$STATE/error.log" >&2
  return 1
}

# workers prints the pids of the master's worker processes.
workers() {
  local master
  master=$(cat "$STATE/nginx.pid")
  grep -l "^PPid:[[:space:]]*$master\$" /proc/[0-9]*/status 2>/dev/null | cut -d/ -f3 || true
}

# wait_gone returns once the old workers have exited: until then they
# may still accept a new connection and route it by the old weights. An
# old worker finishes its requests in flight and closes its idle
# connections first.
wait_gone() {
  local pid i
  for pid in $1; do
    for i in $(seq 1 600); do
      [ -d "/proc/$pid" ] || break
      sleep 0.05
    done
  done
}

# get prints the body of GET PATH on 127.0.0.1:PORT (bash's /dev/tcp: no curl needed).
get() {
  { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
  printf 'GET %s HTTP/1.0\r\nHost: router\r\n\r\n' "$2" >&3
  sed '1,/^\r$/d' <&3
  exec 3<&-
}

apply() {
  mkdir -p "$STATE/tmp"
  write_upstream
  if running; then
    local old
    old=$(workers)
    ctl -s reload
    wait_gone "$old"
    wait_generation
    return
  fi
  local port=${PORT:-0} attempt
  [ "$port" != 0 ] || port=$(cat "$STATE/port" 2>/dev/null || echo $((20000 + RANDOM % 40000)))
  for attempt in $(seq 1 20); do
    config "$port" >"$STATE/nginx.conf"
    if ctl 2>>"$STATE/error.log"; then
      echo "$port" >"$STATE/port"
      echo "127.0.0.1:$port" >"$STATE/addr"
      wait_generation
      return
    fi
    # A fixed port that is taken is an error; a free one chosen here may be taken meanwhile: another.
    if [ "${PORT:-0}" != 0 ]; then break; fi
    port=$((20000 + RANDOM % 40000))
  done
  cat "$STATE/error.log" >&2
  exit 1
}

stop() {
  running || return 0
  local pid i
  pid=$(cat "$STATE/nginx.pid")
  ctl -s stop || true
  for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
}

case ${1:-} in
apply) apply ;;
stop) stop ;;
*) echo "usage: nginx.sh apply|stop" >&2; exit 2 ;;
esac
