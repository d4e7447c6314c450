// Package layout states agentmcp's dependency rule (docs/ARCHITECTURE.md) as
// data, and checks a package graph against it. Its test runs the check on
// the real graph from `go list -deps`, so an import that points the wrong
// way fails the build's tests, not a review.
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
)

// sqliteDeps is modernc.org/sqlite and what it pulls in: its C library
// translated to Go, and that library's own dependencies.
var sqliteDeps = []string{"modernc.org/libc/...", "modernc.org/mathutil", "modernc.org/memory", "modernc.org/sqlite/...", "golang.org/x/sys/...", "github.com/dustin/go-humanize", "github.com/google/uuid",
	"github.com/remyoudompheng/bigfft", "github.com/mattn/go-isatty", "github.com/ncruces/go-strftime"}

var core = []string{"ports", "domain"}

// Rules is the allow-list. A package of the module that no rule names is a
// violation too, so a new package must state its place.
var Rules = []Rule{
	{"domain", nil, "pure rules: the standard library only"},
	{"ports", []string{"domain"}, "ports speak the domain's types"},
	{"engine", core, "the shared protocol engine serves the ports"},
	{"adapters/streamable", append([]string{"engine"}, core...), "shared Streamable HTTP framing over the engine"},
	{"adapters/stdio", append([]string{"engine"}, core...), "a carrier: engine, ports, domain"},
	{"adapters/unixsocket", append([]string{"engine"}, core...), "a carrier: engine, ports, domain"},
	{"adapters/httploopback", append([]string{"engine", "adapters/streamable"}, core...), "a carrier: shared protocol packages, ports, domain"},
	{"adapters/httpremote", append([]string{"engine", "adapters/streamable", timeRate}, core...), "a carrier; reaches the verifier through its port, never adapters/oauth"},
	{"adapters/oauth", append([]string{jose + "/..."}, core...), "the verifier: go-jose, ports, domain"},
	{"adapters/workspace", core, "the reference session: ports, domain"},
	{"adapters/agent", append([]string{"adapters/memstore"}, core...), "the agent loop: the Session it wraps, the Model it drives and the ConversationStore it keeps, through the ports only (never a model adapter, a durable store or the workspace); the in-memory store is its default"},
	{"adapters/memstore", core, "the in-memory ConversationStore: ports, domain"},
	{"adapters/sqlite", append(append([]string{}, sqliteDeps...), core...), "the durable ConversationStore: modernc.org/sqlite (pure Go), ports, domain"},
	{"adapters/openai", append([]string{goOpenAI + "/..."}, core...), "a Model adapter: the Chat Completions client library, ports, domain"},
	{"ports/porttest", core, "the Session contract suite: ports, domain"},
	{"internal/fake", core, "a scripted session for tests"},
	{"internal/chatscript", nil, "a scripted Chat Completions endpoint for tests: the standard library only"},
	{"internal/syncbuf", nil, "a goroutine-safe buffer for tests: the standard library only"},
	{"internal/leakcheck", nil, "a goroutine-leak check for tests: the standard library only"},
	{"internal/hostile", nil, "misbehaving clients for tests: the standard library only"},
	{"internal/load", append([]string{jose + "/...", "internal/hostile"}, core...), "load-test drivers: a session for the ports, go-jose for the test issuer's tokens, the misbehaving clients beside the load"},
	{"internal/enginetest", append([]string{"engine", "internal/fake"}, core...), "test support: the engine a carrier's test serves, shut down when the test ends"},
	{"internal/fuzzhttp", []string{"..."}, "test harness: fuzzing helpers for the HTTP hosts over the transcript checks"},
	{"internal/waitfor", nil, "a bounded wait on a channel for tests: the standard library only"},
	{"internal/layout", nil, "this rule"},
	{"internal/transcript/...", []string{"..."}, "test harness: may drive every carrier"},
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
