package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What TestMain prepares once for every test.
var (
	repo      string // the repository's root directory
	binPath   string // the agentmcp binary, built from repo
	hostDir   string // the host page, built by web/build.mjs host
	chromium  string // Debian's chromium
	artefacts string // where the screenshots go; printed, kept
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "browser: %v\n", err)
		return 1
	}
	wd, err := os.Getwd()
	if err != nil {
		return fail(err)
	}
	repo = filepath.Dir(wd)
	if _, err := os.Stat(filepath.Join(repo, "web", "node_modules", "@modelcontextprotocol", "ext-apps")); err != nil {
		return fail(errors.New("web/'s npm packages are not installed: run npm ci in web/ (scripts/test.sh does)"))
	}
	if chromium, err = exec.LookPath("chromium"); err != nil {
		return fail(errors.New("chromium not found: apt-get install chromium (scripts/test.sh does, scripts/lib.sh need_chromium)"))
	}
	dir, err := os.MkdirTemp("", "agentmcp-browser-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	// The agent's conversations stay in memory (--ephemeral); nothing
	// reaches the home directory.
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	if artefacts = os.Getenv("AGENTMCP_BROWSER_ARTEFACTS"); artefacts == "" {
		if artefacts, err = os.MkdirTemp("", "agentmcp-browser-artefacts-"); err != nil {
			return fail(err)
		}
	} else if err := os.MkdirAll(artefacts, 0o755); err != nil {
		return fail(err)
	}
	fmt.Fprintf(os.Stderr, "browser: screenshots and the axe reports go to %s\n", artefacts)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	binPath = filepath.Join(dir, "agentmcp")
	// Built without -race: this module measures what a person sees; the
	// server's races are the root module's and interop's to find.
	if err := run(ctx, repo, "go", "build", "-o", binPath, "./app/cmd/agentmcp"); err != nil {
		return fail(err)
	}
	hostDir = filepath.Join(dir, "host")
	if err := run(ctx, filepath.Join(repo, "web"), "node", "build.mjs", "host", hostDir); err != nil {
		return fail(err)
	}
	return m.Run()
}

// run runs a command in dir, its output in the error when it fails.
func run(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s (in %s): %v\n%s", name, strings.Join(args, " "), dir, err, out.String())
	}
	return nil
}
