package app

import (
	"context"
	"flag"
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
)

// modulePath is this module's path, as the build information names it.
const modulePath = "github.com/agentmcp/agentmcp"

// baseVersion is serverInfo.version of a build that is not a release.
const baseVersion = "0.1.0"

// Version is reported as serverInfo.version by every carrier the command
// line starts, and is the first line of "agentmcp version".
//
// It is the release this module was built at, without its "v" ("v0.2.0" →
// "0.2.0"), when the build information names one — the main module's
// version, or this module's among the dependencies of a host that imports
// it. Otherwise it is baseVersion, "0.1.0": a build from a work tree without
// VCS stamping ("(devel)": go run, -buildvcs=false, a git worktree) or from
// an untagged or modified commit (a pseudo-version, "+dirty") is not a
// release, and "agentmcp version" shows what it is instead.
var Version = serverVersion(debug.ReadBuildInfo())

var (
	// release matches a module version that names a release: vX.Y.Z,
	// optionally with a pre-release, and no build metadata ("+dirty").
	release = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)
	// pseudo matches the tail every pseudo-version ends with: a UTC
	// timestamp and a 12-digit commit prefix.
	pseudo = regexp.MustCompile(`[0-9]{14}-[0-9a-f]{12}$`)
)

// serverVersion derives Version from the build information (ok false: none).
func serverVersion(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		return baseVersion
	}
	m := thisModule(bi)
	if m == nil || !release.MatchString(m.Version) || pseudo.MatchString(m.Version) {
		return baseVersion
	}
	return strings.TrimPrefix(m.Version, "v")
}

// thisModule returns this module's entry in bi: the main module, or the
// dependency (its replacement, when replaced); nil when bi has none.
func thisModule(bi *debug.BuildInfo) *debug.Module {
	if bi.Main.Path == modulePath {
		return &bi.Main
	}
	for _, d := range bi.Deps {
		if d.Path == modulePath {
			if d.Replace != nil {
				return d.Replace
			}
			return d
		}
	}
	return nil
}

// versionCommand is "agentmcp version" (and "agentmcp --version").
var versionCommand = &command{
	name:    "version",
	summary: "Print the version, module version, VCS revision and Go version",
	about: `The first line is the version every carrier reports as serverInfo.version: the
module's release when the binary was built from one, else the base version.`,
	example: "agentmcp version",
	setup: func(*flag.FlagSet) runFunc {
		return func(_ context.Context, inv *invocation) int {
			bi, ok := debug.ReadBuildInfo()
			fmt.Fprintf(inv.stdout, "agentmcp %s\n%s", Version, buildText(bi, ok))
			return 0
		}
	},
}

// buildText describes the build in three lines:
//
//	module github.com/agentmcp/agentmcp <module version, or (devel)>
//	revision <VCS revision> (<commit time>, modified|unmodified) | revision unknown
//	go <Go version> <GOOS>/<GOARCH>
//
// The revision is known only when this module is the main module and the
// build stamped VCS data (not go run, -buildvcs=false or a git worktree).
func buildText(bi *debug.BuildInfo, ok bool) string {
	b := &strings.Builder{}
	goVersion := runtime.Version()
	modVersion, revision := "(devel)", "unknown"
	if ok {
		goVersion = bi.GoVersion
		if m := thisModule(bi); m != nil && m.Version != "" {
			modVersion = m.Version
		}
		if bi.Main.Path == modulePath {
			revision = vcsRevision(bi.Settings)
		}
	}
	fmt.Fprintf(b, "module %s %s\n", modulePath, modVersion)
	fmt.Fprintf(b, "revision %s\n", revision)
	fmt.Fprintf(b, "go %s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}

// vcsRevision renders the vcs.* build settings: "<revision> (<time>,
// modified|unmodified)", or "unknown" without vcs.revision.
func vcsRevision(settings []debug.BuildSetting) string {
	s := map[string]string{}
	for _, kv := range settings {
		s[kv.Key] = kv.Value
	}
	rev := s["vcs.revision"]
	if rev == "" {
		return "unknown"
	}
	var notes []string
	if t := s["vcs.time"]; t != "" {
		notes = append(notes, t)
	}
	switch s["vcs.modified"] {
	case "true":
		notes = append(notes, "modified")
	case "false":
		notes = append(notes, "unmodified")
	}
	if len(notes) > 0 {
		rev += " (" + strings.Join(notes, ", ") + ")"
	}
	return rev
}
