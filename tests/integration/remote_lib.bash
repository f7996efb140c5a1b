# Shared by the data_remote*.sh integration tests (sourced; not a test itself): ckpt_lib.bash's tiny model, token
# files and recipe, served over HTTP on 127.0.0.1 by Debian's nginx (start_nginx) or by the fault-injecting
# remote_server.py (start_fault_server), both stopped when the test exits. A test that cannot start its server
# skips (exit 77) and says why.
source "$(dirname "${BASH_SOURCE[0]}")/ckpt_lib.bash"
server_pids=()
trap 'for p in "${server_pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT

skip() {
  echo "SKIP: $*"
  exit 77
}

# start_nginx DIR: nginx serves DIR at $nginx_url (ETag, Last-Modified and range requests as nginx gives them).
start_nginx() {
  local root=$1 nginx
  nginx=$(command -v nginx || echo /usr/sbin/nginx)
  [ -x "$nginx" ] || skip "nginx not installed (scripts/install-deps.sh installs nginx-light)"
  local port
  port=$($py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  mkdir -p "$work/nginx"
  chmod -R o+rX "$work"  # nginx's workers run as nobody
  cat >"$work/nginx/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 256; }
http {
  access_log $work/nginx/access.log;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  server {
    listen 127.0.0.1:$port;
    root $root;
  }
}
CONF
  "$nginx" -e "$work/nginx/error.log" -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off;' \
    >"$work/nginx/stdout" 2>&1 &
  server_pids+=($!)
  nginx_url=http://127.0.0.1:$port
  for _ in $(seq 50); do
    $py -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && return 0
    kill -0 "${server_pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  cat "$work/nginx/stdout" "$work/nginx/error.log" 2>/dev/null
  skip "nginx did not start on 127.0.0.1:$port"
}

# start_fault_server DIR: remote_server.py serves DIR at $fault_url; the first path segment names the fault
# (/ok/, /500x2/, /drop1/, /short/, /etag/, /size/, /hang/, /delayMS/: remote_server.py).
start_fault_server() {
  local root=$1
  coproc FAULT { exec $py "$src/tests/integration/remote_server.py" "$root" 2>"$work/fault_server.err"; }
  server_pids+=($FAULT_PID)
  local port
  read -r -t 10 port <&"${FAULT[0]}" || { cat "$work/fault_server.err"; skip "the fault server did not start"; }
  fault_url=http://127.0.0.1:$port
}

# serve_faults: ckpt_lib's two token files and a mix file naming them (relative lines, resolved against the mix
# file's own URL) behind the fault server; fault_mix MODE is that mix's URL under MODE. info_local holds what
# `data info --scan` says of the same files read locally.
serve_faults() {
  mkdir -p "$work/www/tokens"
  cp "$work/train.npy" "$work/other.npy" "$work/www/tokens/"
  printf 'a,tokens/train.npy\nb,tokens/other.npy\n' >"$work/www/mix.txt"
  start_fault_server "$work/www"
  "$replica" data info --mix "$work/www/mix.txt" --seq-len 64 --scan | same_paths >"$work/info_local.txt"
}
fault_mix() { echo "$fault_url/$1/mix.txt"; }
# same_paths: data info's lines with each file's path cut to tokens/NAME, so local and remote lines compare.
same_paths() { sed -E 's#[^ ]*(tokens/[a-z]+\.npy)#\1#'; }
# Quick retries for the tests: a second without a byte is a timeout.
http_flags=(--http-timeout 1 --http-retries 2)
