// Package carriertest is the conformance kit of a carrier (docs/SPEC.md §5):
// given how to build one over an engine and how to reach it, [Test] runs the
// lifecycle every carrier keeps and the shared transcripts
// (testdata/transcripts, docs/SPEC.md §11) through it. Every carrier of this
// repository passes it in its own test, and so does a new one:
//
//	func TestConformance(t *testing.T) {
//		carriertest.Test(t, carriertest.Kit{
//			Name: "pipe",
//			New:  func(t testing.TB, eng *engine.Engine) (carriertest.Carrier, error) { return pipecarrier.New(eng) },
//			Dial: func(t testing.TB, c carriertest.Carrier) (transcript.Conn, error) { ... },
//		})
//	}
//
// The lifecycle checks, each on a fresh engine over the built-in test
// session (package transcript) and a fresh carrier:
//
//   - StartOnce: a second Start fails with [engine.ErrAlreadyStarted]; the
//     carrier still serves and stops.
//   - StopBeforeStart: Stop before Start returns nil, again too; a later
//     Start fails with [engine.ErrStopped] and Wait returns nil.
//   - StopDuringStart: a Stop while Start validates the catalog (the
//     session's RuntimeTools blocks until its ctx ends) returns nil; that
//     Start fails with [engine.ErrStopped] and Wait returns nil.
//   - StopRepeated: three concurrent Stops of a started carrier return nil,
//     and Wait returns nil.
//   - WaitUntilStop: Wait, called before Start, does not return while the
//     carrier serves; it returns nil after Stop.
//   - BadBytes: bytes that are not JSON-RPC (binary, an unterminated
//     object) are answered or dropped, and a ping after them is answered:
//     bad input never ends the carrier.
//   - CancelCall: a call cancelled with notifications/cancelled gets no
//     response, and the carrier still serves (the shared transcripts
//     check the rest of docs/SPEC.md K5).
//   - StopInFlight: Stop with a call in flight returns, Wait returns nil,
//     and once the engine is shut down no goroutine the test started is
//     left (the goroutine check: not run in parallel with anything).
//
// Then every shared transcript whose carriers: header is empty or names
// the carrier runs through it, in parallel: cancellation, the end of
// input, bad lines, both protocol eras. Each engine must end holding no
// call (its call index empty once it has shut down), and once every
// transcript has ended no goroutine may be left.
package carriertest

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/enginetest"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/transcript"
)

// Carrier is the lifecycle every carrier keeps (docs/SPEC.md §5): Start
// once, Stop safe to repeat and before Start, Wait until the end.
type Carrier = engine.Carrier

// Kit says how to build a carrier and reach it.
type Kit struct {
	// Name is matched against the transcripts' carriers: headers.
	Name string
	// New builds a carrier serving eng, not started. The kit starts,
	// stops and waits for it, then shuts eng down.
	New func(t testing.TB, eng *engine.Engine) (Carrier, error)
	// Dial returns the client's end of one new connection to the started
	// carrier c (what New returned): a [transcript.StreamConn] for a stream
	// carrier, [transcript.NewHTTPConn] for an HTTP one. Its Wait returns
	// once the carrier has finished serving that connection (the end of
	// its output after the client's CloseSend); its Abort ends only the
	// connection. The kit stops the carrier itself.
	Dial func(t testing.TB, c Carrier) (transcript.Conn, error)
	// Transcripts is the glob of the shared transcripts; "" means
	// testdata/transcripts/*.txt of the agentmcp module, found with
	// "go list -m" (so it works from any module that requires it).
	Transcripts string
	// Patience bounds every wait before a check fails; zero means 30 s.
	// It never paces a check.
	Patience time.Duration
}

// defaultPatience is Kit.Patience when zero.
const defaultPatience = 30 * time.Second

// engineOptions are those the shared transcripts expect.
var engineOptions = engine.Options{Name: "agentmcp-test", Version: "1.2.3"}

// Test runs the lifecycle checks, then the shared transcripts.
func Test(t *testing.T, k Kit) {
	if k.Patience <= 0 {
		k.Patience = defaultPatience
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) { c.run(t, k) })
	}
	t.Run("Transcripts", func(t *testing.T) {
		// After every transcript (run in parallel) no goroutine is left, and
		// each engine ended with its call index empty (binding's stop).
		leakcheck.Check(t)
		pattern := k.Transcripts
		if pattern == "" {
			dir, err := moduleDir()
			if err != nil {
				t.Fatalf("finding the shared transcripts: %v (set Kit.Transcripts)", err)
			}
			pattern = filepath.Join(dir, "testdata", "transcripts", "*.txt")
		}
		transcript.Run(t, binding{k}, pattern, transcript.Options{Timeout: k.Patience})
	})
}

// moduleDir is the agentmcp module's directory, as the go command sees it
// from the test's module.
func moduleDir() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/agentmcp/agentmcp").Output()
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// binding serves one transcript over a fresh carrier; the connection's end
// is followed by the carrier's Stop and Wait and the engine's Shutdown.
type binding struct{ k Kit }

func (b binding) Name() string { return b.k.Name }

func (b binding) Connect(t testing.TB, s ports.Session, cfg transcript.Config) (transcript.Conn, error) {
	opts := engineOptions
	opts.AskClient = cfg.AskClient
	eng, err := engine.New(s, opts)
	if err != nil {
		return nil, err
	}
	c, err := b.k.New(t, eng)
	if err != nil {
		return nil, err
	}
	if err := c.Start(context.Background()); err != nil {
		return nil, errors.Join(err, eng.Shutdown(context.Background()))
	}
	conn, err := b.k.Dial(t, c)
	if err != nil {
		return nil, errors.Join(err, stop(c, eng, b.k.Patience))
	}
	return &served{Conn: conn, c: c, eng: eng, patience: b.k.Patience}, nil
}

// stop stops c, waits for it and shuts eng down: the composition root's
// order (docs/SPEC.md §5).
func stop(c Carrier, eng *engine.Engine, patience time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	err := c.Stop(ctx)
	if werr := c.Wait(); err == nil {
		err = werr
	}
	return errors.Join(err, enginetest.Shutdown(ctx, eng))
}

type served struct {
	transcript.Conn
	c        Carrier
	eng      *engine.Engine
	patience time.Duration
	once     sync.Once
	err      error
}

func (s *served) end() error {
	s.once.Do(func() { s.err = stop(s.c, s.eng, s.patience) })
	return s.err
}

func (s *served) Wait() error {
	err := s.Conn.Wait()
	return errors.Join(err, s.end())
}

func (s *served) Abort() {
	s.Conn.Abort()
	_ = s.end()
}

// newCarrier builds an engine over a fresh built-in test session and a
// carrier over it, stopped and shut down when the test ends.
func newCarrier(t testing.TB, k Kit, s ports.Session) (Carrier, *engine.Engine) {
	t.Helper()
	eng, err := engine.New(s, engineOptions)
	if err != nil {
		t.Fatal(err)
	}
	c, err := k.New(t, eng)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), k.Patience)
		defer cancel()
		_ = c.Stop(ctx)
		if err := enginetest.Shutdown(ctx, eng); err != nil {
			t.Error(err)
		}
	})
	return c, eng
}

// started is a started carrier over s (see newCarrier).
func started(t testing.TB, k Kit, s ports.Session) Carrier {
	t.Helper()
	c, _ := newCarrier(t, k, s)
	if err := c.Start(ctxFor(t, k)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return c
}

// stopWaits stops c and checks Stop and then Wait (waited) return nil.
func stopWaits(t testing.TB, k Kit, c Carrier, waited <-chan error) {
	t.Helper()
	if err := c.Stop(ctxFor(t, k)); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := waitFor(t, k, waited, "Wait after Stop"); err != nil {
		t.Errorf("Wait after Stop: %v, want nil", err)
	}
}

func ctxFor(t testing.TB, k Kit) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), k.Patience)
	t.Cleanup(cancel)
	return ctx
}

// waitFor fails t unless ch delivers within patience.
func waitFor[T any](t testing.TB, k Kit, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(k.Patience)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("%s: nothing within %v", what, k.Patience)
	}
	panic("unreachable")
}

func waitCh(c Carrier) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- c.Wait() }()
	return ch
}

var checks = []struct {
	name string
	run  func(testing.TB, Kit)
}{
	{"StartOnce", func(t testing.TB, k Kit) {
		c := started(t, k, fake.New())
		if err := c.Start(ctxFor(t, k)); !errors.Is(err, engine.ErrAlreadyStarted) {
			t.Errorf("a second Start: %v, want an error wrapping engine.ErrAlreadyStarted (a carrier serves once)", err)
		}
		pingAnswered(t, k, c)
		stopWaits(t, k, c, waitCh(c))
	}},
	{"StopBeforeStart", func(t testing.TB, k Kit) {
		c, _ := newCarrier(t, k, fake.New())
		for i := range 2 {
			if err := c.Stop(ctxFor(t, k)); err != nil {
				t.Errorf("Stop #%d before Start: %v, want nil", i+1, err)
			}
		}
		if err := c.Start(ctxFor(t, k)); !errors.Is(err, engine.ErrStopped) {
			t.Errorf("Start after Stop: %v, want an error wrapping engine.ErrStopped (a stopped carrier must not serve)", err)
		}
		if err := waitFor(t, k, waitCh(c), "Wait after a Stop before Start"); err != nil {
			t.Errorf("Wait after a Stop before Start: %v, want nil", err)
		}
	}},
	{"StopDuringStart", func(t testing.TB, k Kit) {
		s := &blockingCatalog{Session: fake.New(), entered: make(chan struct{}, 1)}
		c, _ := newCarrier(t, k, s)
		started := make(chan error, 1)
		go func() { started <- c.Start(ctxFor(t, k)) }()
		waitFor(t, k, s.entered, "Start validating the catalog")
		if err := c.Stop(ctxFor(t, k)); err != nil {
			t.Errorf("Stop during Start: %v, want nil", err)
		}
		if err := waitFor(t, k, started, "Start after a Stop during it"); !errors.Is(err, engine.ErrStopped) {
			t.Errorf("Start after a Stop during it: %v, want an error wrapping engine.ErrStopped", err)
		}
		if err := waitFor(t, k, waitCh(c), "Wait after a Stop during Start"); err != nil {
			t.Errorf("Wait after a Stop during Start: %v, want nil", err)
		}
	}},
	{"StopRepeated", func(t testing.TB, k Kit) {
		c := started(t, k, fake.New())
		errs := make(chan error, 3)
		for range 3 {
			go func() { errs <- c.Stop(ctxFor(t, k)) }()
		}
		for i := range 3 {
			if err := waitFor(t, k, errs, "concurrent Stop"); err != nil {
				t.Errorf("concurrent Stop #%d: %v, want nil", i+1, err)
			}
		}
		if err := c.Stop(ctxFor(t, k)); err != nil {
			t.Errorf("Stop after Stop: %v, want nil", err)
		}
		if err := waitFor(t, k, waitCh(c), "Wait after Stop"); err != nil {
			t.Errorf("Wait after Stop: %v, want nil", err)
		}
	}},
	{"WaitUntilStop", func(t testing.TB, k Kit) {
		c, _ := newCarrier(t, k, fake.New())
		waited := waitCh(c) // before Start: it blocks like any other time
		if err := c.Start(ctxFor(t, k)); err != nil {
			t.Fatalf("Start: %v", err)
		}
		pingAnswered(t, k, c) // serving, so Wait must not have returned
		select {
		case err := <-waited:
			t.Fatalf("Wait returned %v while the carrier was serving", err)
		default:
		}
		stopWaits(t, k, c, waited)
	}},
	{"BadBytes", func(t testing.TB, k Kit) {
		c := started(t, k, fake.New())
		conn := dial(t, k, c)
		for _, bad := range []string{"\x00\xff\xfe binary\n", "{\"jsonrpc\":\"2.0\",\"id\":\n", "[]\n", "null\n"} {
			if err := conn.Send([]byte(bad)); err != nil {
				t.Fatalf("sending %q: %v", bad, err)
			}
		}
		ping(t, k, conn, "9")
	}},
	{"CancelCall", func(t testing.TB, k Kit) {
		s := fake.New()
		calls := s.Started()
		c := started(t, k, s)
		conn := dial(t, k, c)
		startSlow(t, k, conn, calls, "7")
		send(t, conn, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
		msgs := ping(t, k, conn, "8")
		for _, m := range msgs {
			if strings.Contains(string(m), `"id":7`) {
				t.Errorf("the cancelled call was answered: %s", m)
			}
		}
	}},
	{"StopInFlight", func(t testing.TB, k Kit) {
		leakcheck.Check(t) // first: its cleanup runs after every other
		s := fake.New()
		calls := s.Started()
		c := started(t, k, s)
		conn := dial(t, k, c)
		startSlow(t, k, conn, calls, "1")
		if err := c.Stop(ctxFor(t, k)); err != nil {
			t.Errorf("Stop with a call in flight: %v", err)
		}
		if err := waitFor(t, k, waitCh(c), "Wait after Stop"); err != nil {
			t.Errorf("Wait after Stop with a call in flight: %v, want nil", err)
		}
	}},
}

// blockingCatalog is a session whose RuntimeTools, the catalog a Start
// validates, blocks until its ctx ends; entered reports each call.
type blockingCatalog struct {
	*fake.Session
	entered chan struct{}
}

func (b *blockingCatalog) RuntimeTools(ctx context.Context) ([]domain.Tool, error) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// client is one dialled connection whose messages are read as they come
// (a carrier blocked writing must not block the check's sends).
type client struct {
	transcript.Conn
	msgs chan recv
}

type recv struct {
	m   []byte
	err error
}

// dial dials c through k; the connection is aborted when the test ends
// (ending it earlier would end a stdio carrier).
func dial(t testing.TB, k Kit, c Carrier) *client {
	t.Helper()
	conn, err := k.Dial(t, c)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(conn.Abort)
	cl := &client{Conn: conn, msgs: make(chan recv, 1024)}
	go func() {
		for {
			m, err := conn.Recv()
			cl.msgs <- recv{m, err}
			if err != nil {
				return
			}
		}
	}()
	return cl
}

func send(t testing.TB, conn *client, line string) {
	t.Helper()
	if err := conn.Send([]byte(line + "\n")); err != nil {
		t.Fatalf("sending %s: %v", line, err)
	}
}

// startSlow sends a tools/call of the scripted session's "slow" tool with
// id on conn and waits until the session reports that call started.
func startSlow(t testing.TB, k Kit, conn *client, calls <-chan string, id string) {
	t.Helper()
	send(t, conn, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	if name := waitFor(t, k, calls, "the slow call starting"); name != "slow" {
		t.Fatalf("started %q, want slow", name)
	}
}

// pingAnswered dials c and checks a ping is answered.
func pingAnswered(t testing.TB, k Kit, c Carrier) {
	t.Helper()
	conn := dial(t, k, c)
	ping(t, k, conn, "1")
}

// ping sends a ping with id and reads messages until its answer, which
// must be a result; it returns every message read.
func ping(t testing.TB, k Kit, conn *client, id string) [][]byte {
	t.Helper()
	send(t, conn, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
	var msgs [][]byte
	for {
		r := waitFor(t, k, conn.msgs, "the answer to ping "+id)
		if r.err != nil {
			t.Fatalf("waiting for the answer to ping %s: %v (the carrier ended?)", id, r.err)
		}
		msgs = append(msgs, r.m)
		if strings.Contains(string(r.m), `"id":`+id+`,`) || strings.Contains(string(r.m), `"id":`+id+`}`) {
			if !strings.Contains(string(r.m), `"result":{}`) {
				t.Errorf("ping %s answered %s, want an empty result", id, r.m)
			}
			return msgs
		}
	}
}
