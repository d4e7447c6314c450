// Package layout states agentmcp's dependency rule (docs/ARCHITECTURE.md) as
// data, and checks a package graph against it. Its test runs the check on
// the real graph from `go list -deps`, so an import that points the wrong
// way fails the build's tests, not a review.
//
// The rule, with no exception:
//
//	domain ← ports ← engine ← adapters/* ← app
//
// A package imports only packages of its own layer or the layers to its
// left: the MCP server (engine) serves the ports and knows no adapter; a
// carrier or a driven adapter knows the engine and the ports, never app.
// Within adapters/, the HTTP hosts share adapters/streamable, and no
// carrier imports a driven adapter (the remote host reaches the verifier
// through its port). Beside the layers, internal/ holds helpers that
// depend on the standard library only (internal/netcap: the HTTP hosts'
// connection caps and socket tuning) and test harnesses, which may drive
// every carrier but nothing in the module imports.
package layout

import (
	"fmt"
	"sort"
	"strings"
)

// Module is the main module's path.
const Module = "github.com/agentmcp/agentmcp"

// Rule says which non-standard packages a package (and everything it pulls
// in) may depend on. Allowed entries are module-relative package paths
// ("domain") or, for third parties, full path prefixes ending in "/" or exact
// paths.
type Rule struct {
	Package string   // module-relative path; a trailing "/..." covers a subtree
	Allowed []string // what its transitive dependencies may be, beyond the standard library
	Why     string
}

const (
	jose     = "github.com/go-jose/go-jose/v4"
	timeRate = "golang.org/x/time/rate"
	goOpenAI = "github.com/sashabaranov/go-openai"
	// promClient is client_golang and what it pulls in.
	promClient = "github.com/prometheus/..."
	goCmp      = "github.com/google/go-cmp"
	// doublestar matches find_files' ** globs and .gitignore patterns.
	doublestar = "github.com/bmatcuk/doublestar/v4"
	// fsnotify watches the files of resource subscriptions (and pulls in
	// x/sys for inotify's system calls).
	fsnotify = "github.com/fsnotify/fsnotify/..."
	// goLandlock and what it pulls in: x/sys for the system calls, libcap's
	// psx for restricting every thread on kernels before Landlock ABI 8.
	goLandlock = "github.com/landlock-lsm/go-landlock/..."
	xSys       = "golang.org/x/sys/..."
	psx        = "kernel.org/pub/linux/libs/security/libcap/psx"
	// udiff diffs a turn's file changes (the agent's stored turn diffs).
	udiff = "github.com/aymanbagabas/go-udiff/..."
)

// sqliteDeps is modernc.org/sqlite and what it pulls in: its C library
// translated to Go, and that library's own dependencies.
var sqliteDeps = []string{"modernc.org/libc/...", "modernc.org/mathutil", "modernc.org/memory", "modernc.org/sqlite/...", xSys, "github.com/dustin/go-humanize", "github.com/google/uuid",
	"github.com/remyoudompheng/bigfft", "github.com/mattn/go-isatty", "github.com/ncruces/go-strftime"}

// pgxDeps is github.com/jackc/pgx/v5 and what it pulls in: its pool,
// the password file and service file readers, x/text for client
// encodings.
var pgxDeps = []string{"github.com/jackc/...", "golang.org/x/text/...", "golang.org/x/sync/..."}

// core is what every package above the domain may lean on: the ports, the
// domain, and the JSON wire layer beneath them both.
var core = []string{"ports", "domain", "internal/jsonrpc"}

// logs is the one logging default (a nil Logger discards), a
// standard-library-only helper any layer may use.
const logs = "internal/logs"

// Layers are the rule's layers, left to right: a package of layer i may
// depend on module packages of layers 0..i only (see the package doc).
var Layers = []string{"domain", "ports/...", "engine/...", "adapters/...", "app/..."}

// LayerOf returns the layer of the module-relative package rel, or -1 for a
// package outside the layers (internal/, conformance/).
func LayerOf(rel string) int {
	for i, pat := range Layers {
		if matches(pat, rel) {
			return i
		}
	}
	return -1
}

// Rules is the allow-list. A package of the module that no rule names is a
// violation too, so a new package must state its place.
var Rules = []Rule{
	{"internal/jsonrpc", nil, "the JSON wire layer, a leaf beneath the domain: the standard library only"},
	{"domain", []string{"internal/jsonrpc"}, "pure rules: the standard library, and the JSON wire layer for the envelope's rendering and the duplicate-member checks"},
	{"ports", []string{"domain", "internal/jsonrpc"}, "ports speak the domain's types"},
	{"engine", append([]string{logs}, core...), "the shared protocol engine serves the ports"},
	{"adapters/streamable", append([]string{"engine", "internal/netcap", logs}, core...), "shared Streamable HTTP framing over the engine, its server's connections capped by internal/netcap"},
	{"adapters/stdio", append([]string{"engine", logs}, core...), "a carrier: engine, ports, domain"},
	{"adapters/unixsocket", append([]string{"engine", logs}, core...), "a carrier: engine, ports, domain"},
	{"adapters/httploopback", append([]string{"engine", "adapters/streamable", "internal/netcap", logs, timeRate}, core...), "a carrier: shared protocol packages, ports, domain; x/time/rate bounds its refusal log"},
	{"adapters/httpremote", append([]string{"engine", "adapters/streamable", "internal/netcap", logs, timeRate}, core...), "a carrier; reaches the verifier through its port, never adapters/oauth"},
	{"adapters/oauth", append([]string{jose + "/..."}, core...), "the verifier: go-jose, ports, domain"},
	{"adapters/workspace", append([]string{logs, "internal/secretenv", doublestar + "/...", fsnotify, xSys}, core...), "the reference session: ports, domain, doublestar for find_files' globs, fsnotify (and x/sys) for its resource subscriptions (the sandbox reaches it as a function the CLI wires, never adapters/landlock or adapters/bubblewrap)"},
	{"adapters/landlock", []string{goLandlock, xSys, psx}, "the command sandbox's launcher: go-landlock and what it needs, nothing of the project"},
	{"adapters/bubblewrap", nil, "the command sandbox's namespaces: bwrap argument vectors, the standard library only (never adapters/landlock: app composes the two)"},
	{"adapters/agent", append([]string{logs, "adapters/memstore", udiff}, core...), "the agent loop: the Session it wraps, the Model it drives and the ConversationStore it keeps, through the ports only (never a model adapter, a durable store or the workspace); the in-memory store is its default, go-udiff diffs a turn's changes"},
	{"adapters/memstore", core, "the in-memory ConversationStore: ports, domain"},
	{"adapters/sqlite", append(append([]string{"adapters/internal/turnjson"}, sqliteDeps...), core...), "the durable ConversationStore: modernc.org/sqlite (pure Go), ports, domain, the stored turn's JSON"},
	{"adapters/postgres", append(append([]string{"adapters/internal/turnjson"}, pgxDeps...), core...), "the shared ConversationStore: pgx (and what it pulls in), ports, domain, the stored turn's JSON"},
	{"adapters/internal/turnjson", core, "the stored form of a turn's messages and changes, shared by the durable stores: ports, domain"},
	{"adapters/openai", append([]string{goOpenAI + "/...", logs}, core...), "a Model adapter: the Chat Completions client library, ports, domain"},
	{"adapters/metrics", append([]string{promClient, "github.com/beorn7/perks/...", "github.com/cespare/xxhash/...", "github.com/munnerz/goautoneg", xSys, "google.golang.org/protobuf/..."}, core...), "Prometheus metrics: client_golang (and its dependencies) and the ports it observes"},
	{"ports/porttest", core, "the Session contract suite: ports, domain"},
	{"internal/fake", core, "a scripted session for tests"},
	{"internal/chatscript", nil, "a scripted Chat Completions endpoint for tests: the standard library only"},
	{"internal/syncbuf", nil, "a goroutine-safe buffer for tests: the standard library only"},
	{"internal/leakcheck", nil, "a goroutine-leak check for tests: the standard library only"},
	{"internal/hostile", nil, "misbehaving clients for tests: the standard library only"},
	{"internal/load", append([]string{jose + "/...", "internal/hostile"}, core...), "load-test drivers: a session for the ports, go-jose for the test issuer's tokens, the misbehaving clients beside the load"},
	{"internal/enginetest", append([]string{"engine", "internal/fake", logs}, core...), "test support: the engine a carrier's test serves, shut down when the test ends with its call index checked empty"},
	{"internal/fuzzhttp", []string{"..."}, "test harness: fuzzing helpers for the HTTP hosts over the transcript checks"},
	{"internal/pgtest", nil, "a real PostgreSQL cluster for tests (Debian's server binaries, a temporary directory, a free 127.0.0.1 port): the standard library only"},
	{"internal/e2eparts", []string{"internal/pgtest", "internal/chatscript"}, "the end-to-end test's PostgreSQL and scripted model as a command (e2e/replicas.sh): the two test harnesses, the standard library"},
	{"internal/waitfor", nil, "a bounded wait on a channel for tests: the standard library only"},
	{logs, nil, "the logging default: the standard library only"},
	{"internal/netcap", nil, "connection caps and socket tuning for a TCP server: the standard library only"},
	{"internal/layout", nil, "this rule"},
	{"internal/secretenv", nil, "which environment variables hold secrets, and the server's re-execution without its own: the standard library only"},
	{"internal/record", nil, "agentmcp record's transcript writer: the standard library only"},
	{"internal/childpipe", nil, "a child process on pipes of the OS, for the transcript kit's stdio binding and the bench's stdio load: the standard library only"},
	{"carriertest", append([]string{"transcript", "engine", "internal/childpipe", "adapters/stdio", "adapters/httploopback", "adapters/streamable", "internal/fake", "internal/enginetest", "internal/leakcheck", "internal/netcap", logs, timeRate, goCmp + "/..."}, core...), "the carrier conformance kit: a test kit, so it may import the engine, the transcript kit (and what it binds), the scripted test session, the engine's end-of-test check and the goroutine check; no production package imports it"},
	{"transcript", append([]string{"engine", "internal/childpipe", "adapters/stdio", "adapters/httploopback", "adapters/streamable", "internal/fake", "internal/enginetest", "internal/netcap", logs, timeRate, goCmp + "/..."}, core...), "the public transcript kit: a test kit, so it may import the engine and the carriers it binds (stdio, loopback), the scripted test session and the engine's end-of-test check; go-cmp for readable diffs; no production package imports it"},
	{"app/...", []string{"..."}, "the composition root wires everything"},
	{"conformance/...", []string{"..."}, "conformance fixture: a test program wired like app"},
}

// Check returns one line per violation in graph, which maps each package of
// the module (full import path) to its non-standard transitive dependencies.
func Check(graph map[string][]string) []string {
	var bad []string
	for pkg, deps := range graph {
		rel, ok := relative(pkg)
		if !ok {
			continue
		}
		rule, found := ruleFor(rel)
		if !found {
			bad = append(bad, fmt.Sprintf("%s: no dependency rule names this package (add it to layout.Rules)", rel))
			continue
		}
		for _, d := range deps {
			if !allowed(rule.Allowed, d) {
				bad = append(bad, fmt.Sprintf("%s imports %s: not allowed (%s)", rel, d, rule.Why))
			}
		}
	}
	sort.Strings(bad)
	return bad
}

func relative(pkg string) (string, bool) {
	if pkg == Module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(pkg, Module+"/")
	return rel, ok
}

func ruleFor(rel string) (Rule, bool) {
	for _, r := range Rules {
		if matches(r.Package, rel) {
			return r, true
		}
	}
	return Rule{}, false
}

// matches reports whether path p matches pattern pat ("x" exactly, or
// "x/..." for x and everything below it).
func matches(pat, p string) bool {
	if base, ok := strings.CutSuffix(pat, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return pat == p
}

func allowed(list []string, dep string) bool {
	for _, a := range list {
		if a == "..." {
			return true
		}
		if rel, ok := relative(dep); ok {
			if matches(a, rel) {
				return true
			}
			continue
		}
		if matches(a, dep) {
			return true
		}
	}
	return false
}
