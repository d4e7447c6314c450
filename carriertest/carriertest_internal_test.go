package carriertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/transcript"
)

// recorder is a testing.TB that keeps the failures of a check instead of
// failing the test; Fatal ends the check's goroutine.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed []string
}

func (r *recorder) Errorf(format string, a ...any) {
	r.mu.Lock()
	r.failed = append(r.failed, fmt.Sprintf(format, a...))
	r.mu.Unlock()
}
func (r *recorder) Error(a ...any)                 { r.Errorf("%s", fmt.Sprint(a...)) }
func (r *recorder) Fatalf(format string, a ...any) { r.Errorf(format, a...); runtime.Goexit() }
func (r *recorder) Fatal(a ...any)                 { r.Error(a...); runtime.Goexit() }
func (r *recorder) Helper()                        {}
func (r *recorder) Failed() bool                   { r.mu.Lock(); defer r.mu.Unlock(); return len(r.failed) > 0 }
func (r *recorder) Cleanup(f func())               { r.TB.Cleanup(f) }
func (r *recorder) Skipf(format string, a ...any)  { r.Fatalf("skipped: "+format, a...) }
func (r *recorder) Logf(format string, a ...any)   {}
func (r *recorder) Context() context.Context       { return r.TB.Context() }
func (r *recorder) Name() string                   { return r.TB.Name() }
func (r *recorder) Setenv(key, value string)       { r.TB.Setenv(key, value) }
func (r *recorder) TempDir() string                { return r.TB.TempDir() }
func (r *recorder) Chdir(dir string)               { r.TB.Chdir(dir) }
func (r *recorder) Attr(key, value string)         {}
func (r *recorder) Output() io.Writer              { return io.Discard }
func (r *recorder) Skip(a ...any)                  { r.Fatal(a...) }
func (r *recorder) SkipNow()                       { runtime.Goexit() }
func (r *recorder) FailNow()                       { runtime.Goexit() }
func (r *recorder) Fail()                          { r.Errorf("failed") }
func (r *recorder) Skipped() bool                  { return false }
func (r *recorder) Log(a ...any)                   {}
func (r *recorder) ArtifactDir() string            { return r.TB.TempDir() }

// runCheck runs the named check against k on a recorder and returns its
// failures.
func runCheck(t *testing.T, name string, k Kit) []string {
	t.Helper()
	for _, c := range checks {
		if c.name == name {
			r := &recorder{TB: t}
			done := make(chan struct{})
			go func() { defer close(done); c.run(r, k) }()
			<-done
			return r.failed
		}
	}
	t.Fatalf("no check %q", name)
	return nil
}

// flaws are the lifecycle faults a flawed carrier can have.
type flaws struct {
	restart  bool // a second Start returns nil
	badStop  bool // Stop before Start fails
	idleStop bool // Stop returns nil and stops nothing
	endOnBad bool // a line that is not JSON ends the session
	waitNow  bool // Wait returns nil at once
}

// flawed is a stdio carrier with the given flaws.
type flawed struct {
	*stdio.Transport
	flaws
	inW     *io.PipeWriter
	outR    *io.PipeReader
	started bool
}

func (f *flawed) Start(ctx context.Context) error {
	if f.restart && f.started {
		return nil
	}
	f.started = true
	return f.Transport.Start(ctx)
}

func (f *flawed) Wait() error {
	if f.waitNow {
		return nil
	}
	return f.Transport.Wait()
}

func (f *flawed) Stop(ctx context.Context) error {
	switch {
	case f.badStop && !f.started:
		return fmt.Errorf("not started")
	case f.idleStop:
		return nil
	}
	return f.Transport.Stop(ctx)
}

// endingInput is the client's side of a carrier that ends its session on
// a line that is not JSON (it closes the carrier's input there); what is
// sent after it is dropped.
type endingInput struct {
	w     *io.PipeWriter
	ended bool
}

func (e *endingInput) Write(p []byte) (int, error) {
	if e.ended {
		return len(p), nil
	}
	if !json.Valid(bytes.TrimSpace(p)) {
		e.ended = true
		return len(p), e.w.Close()
	}
	return e.w.Write(p)
}

func (e *endingInput) Close() error { return e.w.Close() }

func flawedKit(fl flaws) Kit {
	patience := defaultPatience
	if fl != (flaws{}) {
		// A flawed carrier may leave a wait to run out (Wait after a
		// Stop that failed or did nothing): the failure is recorded then.
		patience = time.Second
	}
	return Kit{
		Name:     "flawed",
		Patience: patience,
		New: func(t testing.TB, eng *engine.Engine) (Carrier, error) {
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			tr, err := stdio.New(eng, stdio.Options{Stdin: inR, Stdout: outW})
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { outW.Close(); inW.Close() })
			return &flawed{Transport: tr, flaws: fl, inW: inW, outR: outR}, nil
		},
		Dial: func(t testing.TB, c Carrier) (transcript.Conn, error) {
			f := c.(*flawed)
			var in io.WriteCloser = f.inW
			if f.endOnBad {
				in = &endingInput{w: f.inW}
			}
			return &transcript.StreamConn{In: in, Out: f.outR, End: f.Wait, Stop: func() { f.inW.Close(); f.outR.Close() }}, nil
		},
	}
}

// TestChecksFail proves the lifecycle checks can fail: each flaw is caught
// by its check, and the same carrier without flaws passes it.
func TestChecksFail(t *testing.T) {
	for _, tc := range []struct {
		check string
		flaws flaws
		want  string
	}{
		{"StartOnce", flaws{restart: true}, "ErrAlreadyStarted"},
		{"StopBeforeStart", flaws{badStop: true}, "Stop #1 before Start"},
		{"StopRepeated", flaws{idleStop: true}, "Wait after Stop: nothing within"},
		{"StopDuringStart", flaws{idleStop: true}, "Start after a Stop during it"},
		{"WaitUntilStop", flaws{idleStop: true}, "Wait after Stop: nothing within"},
		{"WaitUntilStop", flaws{waitNow: true}, "while the carrier was serving"},
		{"StopInFlight", flaws{idleStop: true}, "Wait after Stop: nothing within"},
		{"BadBytes", flaws{endOnBad: true}, "ping 9"},
	} {
		t.Run(tc.check, func(t *testing.T) {
			if got := runCheck(t, tc.check, flawedKit(flaws{})); len(got) != 0 {
				t.Errorf("%s on a sound carrier: %q", tc.check, got)
			}
			got := runCheck(t, tc.check, flawedKit(tc.flaws))
			if !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Errorf("%s on a flawed carrier (%+v): failures %q, want one mentioning %q", tc.check, tc.flaws, got, tc.want)
			}
		})
	}
}
