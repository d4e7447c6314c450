package transcript

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/httploopback"
	"github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/childpipe"
	"github.com/agentmcp/agentmcp/internal/enginetest"
	"github.com/agentmcp/agentmcp/ports"
)

// Stdio binds this repository's stdio carrier (docs/SPEC.md §5.1): each
// transcript gets an engine built from Engine (AskClient from the
// transcript's ask-client: header) and a real stdio.Transport whose stdin
// and stdout are io.Pipes. Its name is "stdio".
type Stdio struct {
	Engine engine.Options
}

// Name implements [Carrier].
func (Stdio) Name() string { return "stdio" }

// Connect implements [Carrier].
func (b Stdio) Connect(t testing.TB, s ports.Session, cfg Config) (Conn, error) {
	eng, err := newEngine(s, b.Engine, cfg)
	if err != nil {
		return nil, err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr, err := stdio.New(eng, stdio.Options{Stdin: inR, Stdout: outW})
	if err != nil {
		return nil, err
	}
	if err := tr.Start(context.Background()); err != nil {
		inW.Close()
		outR.Close()
		return nil, errors.Join(err, eng.Shutdown(context.Background()))
	}
	waited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = tr.Wait()
		// The composition root's part: the engine ends with its carrier,
		// holding no call.
		if err := enginetest.Shutdown(context.Background(), eng); err != nil && waitErr == nil {
			waitErr = err
		}
		// The transport never closes stdout itself; closing our end of it
		// lets the reader see the end once serving has ended.
		outW.Close()
		close(waited)
	}()
	return &StreamConn{
		In: inW, Out: outR,
		End: func() error { <-waited; return waitErr },
		Stop: func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			inW.CloseWithError(errors.New("transcript aborted"))
			_ = tr.Stop(ctx)
			outR.CloseWithError(errors.New("transcript aborted"))
		},
	}, nil
}

// newEngine builds the engine for one transcript: opts, with AskClient as
// the transcript's ask-client: header says.
func newEngine(s ports.Session, opts engine.Options, cfg Config) (*engine.Engine, error) {
	opts.AskClient = cfg.AskClient
	return engine.New(s, opts)
}

// Loopback binds this repository's loopback Streamable HTTP host
// (docs/SPEC.md §5.2) on 127.0.0.1: each transcript gets an engine built
// from Engine (AskClient from the ask-client: header) and a started host;
// every client line is one POST with the host's bearer token
// ([NewHTTPConn]). Its name is "http".
type Loopback struct {
	Engine engine.Options
}

// Name implements [Carrier].
func (Loopback) Name() string { return "http" }

// Connect implements [Carrier].
func (b Loopback) Connect(t testing.TB, s ports.Session, cfg Config) (Conn, error) {
	eng, err := newEngine(s, b.Engine, cfg)
	if err != nil {
		return nil, err
	}
	h, err := httploopback.New(eng, httploopback.Options{})
	if err != nil {
		return nil, err
	}
	if err := h.Start(context.Background()); err != nil {
		return nil, errors.Join(err, eng.Shutdown(context.Background()))
	}
	ep := h.Endpoint()
	return NewHTTPConn(HTTPTarget{
		URL: ep.URL, Token: ep.Token,
		Stop: func(ctx context.Context) error { return errors.Join(h.Stop(ctx), enginetest.Shutdown(ctx, eng)) },
		Wait: h.Wait,
	}), nil
}

// Command binds any stdio MCP server by its command line: each transcript
// starts Path with Args (and os.Environ plus Env) and speaks to its stdin
// and stdout; the session [Play] hands it is not used, so a transcript
// recorded with agentmcp record replays against the server it was recorded
// from, or another. Its name is "stdio". The process's stderr goes to the
// test's log.
type Command struct {
	Path string
	Args []string
	Env  []string
}

// Name implements [Carrier].
func (Command) Name() string { return "stdio" }

// Connect implements [Carrier].
func (b Command) Connect(t testing.TB, _ ports.Session, _ Config) (Conn, error) {
	cmd := exec.Command(b.Path, b.Args...)
	cmd.Env = append(os.Environ(), b.Env...)
	cmd.Stderr = logWriter{t}
	// Pipes of the OS, not exec's: the reader then sees the end of stdout
	// when the process ends, and Wait can run beside it.
	inW, outR, err := childpipe.Start(cmd)
	if err != nil {
		return nil, err
	}
	waited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(waited) }()
	return &StreamConn{
		In: inW, Out: outR,
		End: func() error { <-waited; return waitErr },
		Stop: func() {
			_ = cmd.Process.Kill()
			inW.Close()
			<-waited
			outR.Close()
		},
	}, nil
}

// logWriter writes a process's stderr to the test's log, a line at a time.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", bytes.TrimRight(p, "\n"))
	return len(p), nil
}
