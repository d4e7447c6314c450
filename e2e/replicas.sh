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
lib_name="e2e/replicas.sh"
# shellcheck source=e2e/lib.sh
source "$here/lib.sh"

step "tools: npm, openssl, curl, nginx, postgresql"
need_cmd npm npm
need_cmd openssl openssl
need_cmd curl curl
need_cmd nginx nginx
need_postgres
nginx -v 2>&1

e2e_logs=(a.err b.err issuer.err model.err postgres.err nginx/logs/error.log nginx/logs/access.log)

step "npm packages (Node 22, oauth2-mock-server)"
e2e_packages
e2e_workdir agentmcp-e2e-replicas

step "building agentmcp and the e2e parts (PostgreSQL, the scripted model)"
(cd "$repo" && go build -o "$work/agentmcp" ./app/cmd/agentmcp && go build -o "$work/e2eparts" ./internal/e2eparts)

step "test CA and certificates (openssl)"
e2e_certs

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
e2e_issuer
echo "model: $model_url"

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
# For the test only: which replica answered each request, on the response
# (X-Agentmcp-Upstream) and in the access log.
e2e_nginx_http="log_format upstream '\$request_method \$uri \$status \$upstream_addr';
    access_log $work/nginx/logs/access.log upstream;
    add_header X-Agentmcp-Upstream \$upstream_addr always;"
e2e_nginx "$here/nginx-replicas.conf.template" -e "s|@UPSTREAM_A@|${replica_addr[a]}|" -e "s|@UPSTREAM_B@|${replica_addr[b]}|"
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
e2e_template_in_guide "$here/nginx-replicas.conf.template"

step "all replica checks passed in $((SECONDS - t0)) s"
