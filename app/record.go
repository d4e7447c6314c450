package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentmcp/agentmcp/internal/record"
)

// recordCommand is "agentmcp record --out FILE -- COMMAND [ARGS...]": a
// pass-through between an MCP client and any stdio MCP server that writes
// the exchange as a transcript (docs/SPEC.md §12).
var recordCommand = &command{
	name:     "record",
	summary:  "Run a stdio MCP server behind a pass-through and write the exchange as a transcript",
	synopsis: "--out FILE [flags] -- COMMAND [ARGS...]",
	about: `Point the MCP client at agentmcp record instead of the server: it starts
COMMAND, passes the client's lines to its stdin and its stdout back, and
writes FILE (mode 0600) when the client closes stdin and COMMAND has ended.
FILE replays with the transcript package (docs/SPEC.md §11).

Secrets never reach FILE: minted requestState values become {{requestState}}
and {{state ID}} references; "Bearer ..." values, the values of the
environment variables named by --secret-env and of every variable whose name
ends in _KEY, _TOKEN, _SECRET or holds PASSWORD become REDACTED; an
elicitation answer keeps only the content members named by --keep (default
decision, the permission dialog's). COMMAND's arguments and environment are
not written.`,
	example: "agentmcp record --out session.txt -- agentmcp serve stdio --root ~/project",
	args:    true,
	setup: func(fs *flag.FlagSet) runFunc {
		out := fs.String("out", "", "write the transcript to `FILE` (required)")
		var keep, secretEnv, ignore listFlag
		fs.Var(&keep, "keep", "keep the elicitation answer content `MEMBER` (repeatable; default decision)")
		fs.Var(&secretEnv, "secret-env", "redact the value of environment variable `NAME` (repeatable)")
		fs.Var(&ignore, "ignore", "also write `PATH` under ignore: (repeatable; "+volatileDuration+" always is), e.g. result.serverInfo.version")
		askClient := fs.Bool("ask-client", false, "write ask-client: on (implied when COMMAND's arguments hold --ask-client)")
		return func(ctx context.Context, inv *invocation) int {
			if *out == "" {
				return inv.usageError("--out FILE is required")
			}
			args := inv.fs.Args()
			if len(args) == 0 {
				return inv.usageError("missing -- COMMAND [ARGS...]")
			}
			opts := record.Options{
				Comment:   fmt.Sprintf("Recorded by agentmcp record from %s.", filepath.Base(args[0])),
				Keep:      keep,
				Secrets:   secretValues(os.Environ(), secretEnv),
				Ignore:    append([]string{volatileDuration}, ignore...),
				AskClient: *askClient || slices.ContainsFunc(args[1:], func(a string) bool { return a == "--ask-client" || a == "-ask-client" || a == "--ask-client=true" }),
			}
			return runRecord(ctx, inv, *out, args, opts)
		}
	},
}

// volatileDuration is always under a recording's ignore: an execution
// envelope's duration (docs/SPEC.md §1), which no replay reproduces.
const volatileDuration = "result.content.*.text.duration"

// listFlag is a repeatable flag; a value may also be a comma-separated list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for p := range strings.SplitSeq(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// secretValues returns the values to redact: those of the variables named,
// and of every variable whose name says it holds a secret.
func secretValues(environ []string, named []string) []string {
	var out []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || len(v) < 8 {
			continue
		}
		uk := strings.ToUpper(k)
		if slices.Contains(named, k) || strings.HasSuffix(uk, "_KEY") || strings.HasSuffix(uk, "_TOKEN") ||
			strings.HasSuffix(uk, "_SECRET") || strings.Contains(uk, "PASSWORD") {
			out = append(out, v)
		}
	}
	return out
}

func runRecord(ctx context.Context, inv *invocation, out string, args []string, opts record.Options) int {
	logger := newLogger(inv.stderr)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stderr = inv.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logger.Error("cannot start the server", "err", err)
		return 1
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logger.Error("cannot start the server", "err", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		logger.Error("cannot start the server", "err", err)
		return 1
	}
	var rec record.Recorder
	// The client's lines go to the server until the client closes its
	// output; then the server's stdin is closed, its end of input.
	go func() {
		_ = record.Copy(stdin, inv.stdin, rec.Client, rec.ClientSize)
		stdin.Close()
	}()
	copyErr := record.Copy(inv.stdout, stdout, rec.Server, rec.ServerSize)
	if copyErr != nil {
		// The client stopped reading: the server cannot be answered.
		_ = cmd.Process.Kill()
		_, _ = io.Copy(io.Discard, stdout)
	}
	waitErr := cmd.Wait()
	if err := os.WriteFile(out, rec.Transcript(opts), 0o600); err != nil {
		logger.Error("cannot write the transcript", "err", err)
		return 1
	}
	var exit *exec.ExitError
	switch {
	case copyErr != nil:
		logger.Error("writing to the client failed", "err", copyErr)
		return 1
	case errors.As(waitErr, &exit):
		logger.Error("the server failed", "status", exit.ExitCode())
		return 1
	case waitErr != nil:
		logger.Error("the server failed", "err", waitErr)
		return 1
	}
	return 0
}
