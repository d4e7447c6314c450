package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentmcp/agentmcp/internal/record"
	"github.com/agentmcp/agentmcp/internal/secretenv"
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
writes FILE when the client closes stdin and COMMAND has ended: a new file of
mode 0600 renamed over FILE (a symbolic link is refused, never followed).
FILE replays with the transcript package (docs/SPEC.md §11).

Secrets never reach FILE: minted requestState values become {{requestState}}
and {{state ID}} references; "Bearer ..." values, HTTP Basic credentials, the
password of any URL, and the values of the environment variables named by
--secret-env or whose name holds KEY, TOKEN, SECRET, PASSWORD, PASSWD or
CREDENTIAL, ends in _PAT or is DATABASE_URL become REDACTED, in any JSON
spelling; an elicitation answer keeps only the content members named by
--keep (default decision, the permission dialog's). COMMAND's arguments and
environment are not written.`,
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
			if err := checkOut(*out); err != nil {
				return inv.usageError("--out: %v", err)
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
// of every variable whose name says it holds a secret (secretenv's rule:
// *KEY*, *TOKEN*, *SECRET*, *PASSWORD*, *PASSWD*, *CREDENTIAL*, *_PAT,
// DATABASE_URL), of 8 bytes or more, and the password of every variable
// whose value is a URL with one (4 bytes or more).
func secretValues(environ []string, named []string) []string {
	var out []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if len(v) >= 8 && (slices.Contains(named, k) || secretenv.IsSecretName(k)) {
			out = append(out, v)
		}
		if pw, ok := secretenv.URLPassword(v); ok && len(pw) >= 4 {
			out = append(out, pw)
		}
	}
	return out
}

// checkOut refuses --out FILE when it names something that cannot be
// replaced safely: a symbolic link (never written through) or anything
// but a regular file.
func checkOut(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link: the transcript is never written through one; remove it or choose another FILE", path)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", path)
	}
	return nil
}

// writeOut writes the transcript to path as a new file of mode 0600 in
// the same directory, then renames it over path: an existing file is
// replaced whole (its old mode, its other links untouched), a symbolic
// link put at path meanwhile is replaced, never followed, and a failure
// leaves path as it was.
func writeOut(path string, data []byte) error {
	if err := checkOut(path); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp") // O_EXCL, mode 0600
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
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
	if err := writeOut(out, rec.Transcript(opts)); err != nil {
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
