package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"
)

// Carrier serves a session to one client connection for a transcript run.
// Each carrier has a binding in its tests: stdio (stdio_test.go here), the
// Unix socket, the loopback host and the remote host.
type Carrier interface {
	// Name is matched against a transcript's carriers: header.
	Name() string
	// Connect starts serving s, configured as cfg asks, and returns the
	// client's end. It is called once per transcript, inside the bubble
	// when [Options.Bubble] is set.
	Connect(t testing.TB, s ports.Session, cfg Config) (Conn, error)
}

// Config is what a transcript asks of the server a carrier builds for it.
type Config struct {
	// AskClient turns on asking the client (docs/SPEC.md §6: the carrier's
	// AskClient option), from the ask-client: on header.
	AskClient bool
}

// Conn is the client's end of one served connection. Send, CloseSend and
// Abort are called from one goroutine; Recv from another.
type Conn interface {
	// Send delivers p to the server's input exactly: a stream carrier writes
	// the bytes; a message carrier sends each complete line as one message.
	Send(p []byte) error
	// CloseSend ends the client's output (stdin EOF on stdio).
	CloseSend() error
	// Recv returns the server's next message (one line on stdio, without
	// its newline); io.EOF once the server's output has ended, after Wait.
	Recv() ([]byte, error)
	// Wait blocks until the server has ended serving and returns its result.
	Wait() error
	// Abort stops the server at once (a failed run); Recv and Wait then
	// return promptly. It is safe to call at any time, more than once.
	Abort()
}

// Options configures [Run], [RunFile] and [Play].
type Options struct {
	// Session makes the session each transcript is served from, fresh per
	// transcript: a host's own. Nil means the built-in test session
	// (package doc, "Session and carriers"). Transcripts that drive the
	// built-in session (#wait-started, #wait-ended, #release, #set-tools,
	// #calls) fail against a host's own, with an error naming the directive.
	Session func(t testing.TB) ports.Session
	// Update rewrites the server section of failing transcripts from the
	// actual output instead of failing.
	Update bool
	// Bubble runs each transcript inside a testing/synctest bubble: time is
	// fake and the bubble's end proves no goroutine was left behind.
	Bubble bool
	// Timeout bounds one transcript; zero means 60 s. It only guards against
	// a hang, it never synchronises.
	Timeout time.Duration
}

// Run runs every transcript whose path matches pattern ([filepath.Glob]
// syntax, e.g. "testdata/*.txt") against c, each as a parallel subtest
// named for its file. A pattern that matches nothing fails t.
func Run(t *testing.T, c Carrier, pattern string, opts Options) {
	t.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("transcript: no file matches %q", pattern)
	}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Parse(path, data)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			t.Parallel()
			RunFile(t, c, f, opts)
		})
	}
}

// RunFile plays f against c and compares the server's output with f's
// server section (or rewrites it when opts.Update is set).
func RunFile(t *testing.T, c Carrier, f *File, opts Options) {
	if len(f.Carriers) > 0 && !slices.Contains(f.Carriers, c.Name()) {
		t.Skipf("%s: only for carriers %v", f.Path, f.Carriers)
	}
	body := func(t *testing.T) {
		res, err := Play(t, c, f, opts)
		if err != nil {
			t.Errorf("%s", report(f, c, res, []string{err.Error()}))
			return
		}
		problems := Compare(f, res)
		if len(problems) == 0 {
			return
		}
		if opts.Update && len(f.Bugs) > 0 {
			t.Errorf("%s\n  (-update leaves this transcript alone: it pins docs/SPEC.md's answer to a known bug; delete its bug: line once the bug is fixed)", report(f, c, res, problems))
			return
		}
		if opts.Update {
			msgs := UpdateOrder(f, res.Messages)
			for i, m := range msgs {
				msgs[i] = MaskTokens(m)
			}
			out := Format(f, msgs, res.Calls)
			if err := os.WriteFile(f.Path, out, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("updated %s", f.Path)
			return
		}
		t.Errorf("%s", report(f, c, res, problems))
	}
	if opts.Bubble {
		synctest.Test(t, body)
	} else {
		body(t)
	}
}

func report(f *File, c Carrier, res Result, problems []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "transcript %s over %s:\n", f.Path, c.Name())
	if len(f.Bugs) > 0 {
		b.WriteString("  KNOWN SERVER BUG pinned by this transcript (see transcript/BUGS.md); it expects docs/SPEC.md's answer:\n")
		for _, bug := range f.Bugs {
			fmt.Fprintf(&b, "    - %s\n", bug)
		}
	}
	for _, p := range problems {
		fmt.Fprintf(&b, "  %s\n", strings.ReplaceAll(p, "\n", "\n  "))
	}
	fmt.Fprintf(&b, "  the server wrote, in arrival order:\n")
	for _, m := range res.Messages {
		fmt.Fprintf(&b, "    %s\n", truncate(m, 400))
	}
	if res.Messages == nil {
		b.WriteString("    (nothing)\n")
	}
	return b.String()
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return fmt.Sprintf("%s… (%d bytes)", b[:n], len(b))
}

// Result is what one run produced.
type Result struct {
	Messages [][]byte // the server's messages in arrival order
	Calls    []string // the session's calls, sorted
}

// Play runs f's client steps against a fresh session served by c and
// returns everything the server wrote. An error means the run itself failed
// (a step timed out, the server did not end, Wait returned an error, or f
// drives the built-in session while opts.Session is set); the partial
// result is returned with it. Res.Calls is nil with opts.Session set.
func Play(t testing.TB, c Carrier, f *File, opts Options) (res Result, err error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	var s *session
	var served ports.Session
	if opts.Session != nil {
		if d := sessionDirective(f); d != "" {
			return res, fmt.Errorf("%s: %s drives the built-in test session; it cannot run against Options.Session", f.Path, d)
		}
		served = opts.Session(t)
	} else {
		s = newSession()
		s.conversations = f.Conversations
		defer s.close()
		served = s
		if f.Features {
			s.features = new(fake.Features)
			served = featured{s}
		}
	}
	conn, err := c.Connect(t, served, Config{AskClient: f.AskClient})
	if err != nil {
		return res, fmt.Errorf("connect: %w", err)
	}
	in := newInbox()
	go func() {
		for {
			m, err := conn.Recv()
			if err != nil {
				in.end(err)
				return
			}
			in.add(m)
		}
	}()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	p := &player{f: f, s: s, conn: conn, in: in, deadline: deadline.C,
		waited: make(map[string]int), started: make(map[string]int), ended: make(map[string]int),
		requested: make(map[string]int), answered: make(map[int]bool)}
	defer func() {
		res.Messages = slices.DeleteFunc(in.snapshot(), isPoll)
		if s != nil {
			res.Calls = s.Calls()
			slices.Sort(res.Calls)
		}
	}()
	if err := p.play(); err != nil {
		conn.Abort()
		// Let the server and the receiver end so nothing outlives the run.
		grace := time.NewTimer(10 * time.Second)
		defer grace.Stop()
		waited := make(chan struct{})
		go func() { _ = conn.Wait(); close(waited) }()
		select {
		case <-waited:
			_ = in.wait(grace.C, func([][]byte, bool) bool { return in.isEnded() })
		case <-grace.C:
		}
		return res, err
	}
	return res, nil
}

// sessionDirective returns the first directive of f that only the built-in
// test session can follow, or "".
func sessionDirective(f *File) string {
	if f.HasCalls {
		return "#calls"
	}
	if f.Conversations {
		return "the conversations: header"
	}
	if f.Features {
		return "the features: header"
	}
	for _, st := range f.Steps {
		switch st.Kind {
		case "wait-started", "wait-ended", "release", "set-tools", "update":
			return fmt.Sprintf("line %d: #%s", st.Line, st.Kind)
		}
	}
	return ""
}

type player struct {
	f        *File
	s        *session
	conn     Conn
	in       *inbox
	deadline <-chan time.Time
	closed   bool

	waited    map[string]int // #wait id → messages consumed
	idless    int
	started   map[string]int
	ended     map[string]int
	requested map[string]int // #wait-request method → requests consumed
	polls     int            // #poll-task requests sent
	answered  map[int]bool   // message index → answered
}

func (p *player) play() error {
	for _, st := range p.f.Steps {
		if err := p.step(st); err != nil {
			return fmt.Errorf("%s:%d: %s: %w", p.f.Path, st.Line, st.Kind, err)
		}
	}
	if !p.closed {
		if err := p.conn.CloseSend(); err != nil {
			return fmt.Errorf("closing the client's output: %w", err)
		}
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- p.conn.Wait() }()
	select {
	case err := <-waitErr:
		if err != nil {
			return fmt.Errorf("the server's Wait after the client closed its output: got %v, want nil", err)
		}
	case <-p.deadline:
		return errors.New("timed out waiting for the server to end after the client closed its output")
	}
	if err := p.in.wait(p.deadline, func([][]byte, bool) bool { return p.in.isEnded() }); err != nil {
		return errors.New("timed out waiting for the end of the server's output")
	}
	if err := p.in.recvErr(); err != nil {
		return fmt.Errorf("reading the server's output: %w", err)
	}
	return nil
}

func (p *player) step(st Step) error {
	switch st.Kind {
	case "send":
		data, err := p.substitute(st)
		if err != nil {
			return err
		}
		return p.send(data)
	case "fill":
		return p.fill(st.N, st.Arg[0])
	case "wait":
		p.waited[st.Arg]++
		want := p.waited[st.Arg]
		return p.in.wait(p.deadline, func(msgs [][]byte, _ bool) bool {
			n := 0
			for _, m := range msgs {
				if k, _ := classify(m); k == "id:"+st.Arg {
					n++
				}
			}
			return n >= want
		})
	case "wait-idless":
		p.idless++
		want := p.idless
		return p.in.wait(p.deadline, func(msgs [][]byte, _ bool) bool {
			n := 0
			for _, m := range msgs {
				if k, _ := classify(m); k == "" {
					n++
				}
			}
			return n >= want
		})
	case "wait-started", "wait-ended":
		ended := st.Kind == "wait-ended"
		consumed := p.started
		if ended {
			consumed = p.ended
		}
		consumed[st.Arg] += st.N
		want := consumed[st.Arg]
		for {
			n, changed := p.s.count(ended, st.Arg)
			if n >= want {
				return nil
			}
			select {
			case <-changed:
			case <-p.deadline:
				return fmt.Errorf("timed out: %d calls of %s so far, want %d", n, st.Arg, want)
			}
		}
	case "poll-task":
		return p.pollTask(st)
	case "release":
		if !p.s.releaseOnce() {
			return errors.New("#release a second time")
		}
		return nil
	case "update":
		if p.s.features == nil {
			return errors.New("#update needs the features: on header")
		}
		if n := p.s.features.Update(st.Arg); st.N == 1 && n > 0 {
			return fmt.Errorf("%d subscriptions hold %s, want none", n, st.Arg)
		}
		return nil
	case "set-tools":
		var listed []struct {
			domain.Tool
			Execution struct {
				TaskSupport domain.TaskSupport `json:"taskSupport"`
			} `json:"execution"`
		}
		if err := json.Unmarshal(st.Data, &listed); err != nil {
			return err
		}
		tools := make([]domain.Tool, len(listed))
		for i, l := range listed {
			tools[i] = l.Tool
			tools[i].TaskSupport = l.Execution.TaskSupport
		}
		p.s.SetTools(tools)
		return nil
	case "wait-request":
		p.requested[st.Arg]++
		want := p.requested[st.Arg]
		return p.in.wait(p.deadline, func(msgs [][]byte, _ bool) bool {
			n := 0
			for _, m := range msgs {
				if k, method := classify(m); strings.HasPrefix(k, "req:") && method == st.Arg {
					n++
				}
			}
			return n >= want
		})
	case "answer", "answer-error":
		var idx int
		var id json.RawMessage
		err := p.in.wait(p.deadline, func(msgs [][]byte, _ bool) bool {
			for i, m := range msgs {
				if k, method := classify(m); strings.HasPrefix(k, "req:") && method == st.Arg && !p.answered[i] {
					idx, id = i, json.RawMessage(strings.TrimPrefix(k, "req:"))
					return true
				}
			}
			return false
		})
		if err != nil {
			return err
		}
		p.answered[idx] = true
		member := "result"
		if st.Kind == "answer-error" {
			member = "error"
		}
		resp, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, member: json.RawMessage(st.Data)})
		if err != nil {
			return err
		}
		return p.send(append(resp, '\n'))
	case "close":
		if p.closed {
			return errors.New("already closed")
		}
		p.closed = true
		return p.conn.CloseSend()
	}
	return fmt.Errorf("unknown step")
}

// pollIDPrefix starts the ids of #poll-task's requests; their answers are
// left out of the run's messages.
const pollIDPrefix = `"poll-`

func isPoll(m []byte) bool {
	k, _ := classify(m)
	return strings.HasPrefix(k, "id:"+pollIDPrefix)
}

// pollTask sends tasks/get for the task until its status is st.Arg, as a
// client of the tasks extension does (docs/SPEC.md §14): a task settles on
// its own goroutine after the session's call returns, so no other step
// can tell when it has. Each poll waits for its answer; at most 10000.
func (p *player) pollTask(st Step) error {
	for range 10000 {
		p.polls++
		id := pollIDPrefix + strconv.Itoa(p.polls) + `"`
		line := `{"jsonrpc":"2.0","id":` + id + `,"method":"tasks/get","params":{"taskId":"` + st.States[0].Text +
			`","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}` + "\n"
		data, err := p.substitute(Step{Data: []byte(line), States: st.States})
		if err != nil {
			return err
		}
		if err := p.send(data); err != nil {
			return err
		}
		var resp []byte
		err = p.in.wait(p.deadline, func(msgs [][]byte, _ bool) bool {
			for _, m := range msgs {
				if k, _ := classify(m); k == "id:"+id {
					resp = m
					return true
				}
			}
			return false
		})
		if err != nil {
			return err
		}
		var v struct {
			Result struct {
				Status string `json:"status"`
			} `json:"result"`
		}
		if json.Unmarshal(resp, &v) != nil || v.Result.Status == "" {
			return fmt.Errorf("tasks/get answered %s", truncate(resp, 400))
		}
		if v.Result.Status == st.Arg {
			return nil
		}
	}
	return fmt.Errorf("the task never reached status %s", st.Arg)
}

// substitute returns a send step's bytes with each {{state ID}} ({{task
// ID}}) replaced by the requestState (taskId) of the response with id ID
// that the latest #wait ID consumed. The token must be one docs/SPEC.md §6 allows (32 bytes of base64url);
// "tampered" changes its first character, which keeps it well-formed.
func (p *player) substitute(st Step) ([]byte, error) {
	data := st.Data
	for _, r := range st.States {
		n := p.waited[r.ID]
		if n == 0 {
			return nil, fmt.Errorf("%s: no #wait %s before it", r.Text, r.ID)
		}
		var resp []byte
		for _, m := range p.in.snapshot() {
			if k, _ := classify(m); k == "id:"+r.ID {
				if n--; n == 0 {
					resp = m
					break
				}
			}
		}
		var v struct {
			Result map[string]json.RawMessage `json:"result"`
		}
		var tok string
		_ = json.Unmarshal(resp, &v)
		if nested, ok := v.Result["task"]; ok && r.Member == "taskId" {
			// 2025-11-25 nests the Task: {"task":{"taskId":…}}.
			_ = json.Unmarshal(nested, &v.Result)
		}
		if json.Unmarshal(v.Result[r.Member], &tok) != nil {
			return nil, fmt.Errorf("%s: the response with id %s that #wait %s consumed has no string result.%s: %s", r.Text, r.ID, r.ID, r.Member, truncate(resp, 400))
		}
		if !ValidToken(tok) {
			return nil, fmt.Errorf("%s: result.%s %q is not 32 bytes of base64url (43 characters, no padding)", r.Text, r.Member, tok)
		}
		if r.Tampered {
			c := byte('A')
			if tok[0] == 'A' {
				c = 'B'
			}
			tok = string(c) + tok[1:]
		}
		data = bytes.Replace(data, []byte(r.Text), []byte(tok), 1)
	}
	return data, nil
}

// send writes p, bounded by the deadline (a server that stopped reading
// must fail the run, not hang it).
func (p *player) send(b []byte) error {
	if p.closed {
		return errors.New("the client's output is closed")
	}
	return p.bounded(func() error { return p.conn.Send(b) })
}

func (p *player) fill(n int, c byte) error {
	if p.closed {
		return errors.New("the client's output is closed")
	}
	return p.bounded(func() error {
		chunk := bytes.Repeat([]byte{c}, 64<<10)
		for n > 0 {
			k := min(n, len(chunk))
			if err := p.conn.Send(chunk[:k]); err != nil {
				return err
			}
			n -= k
		}
		return p.conn.Send([]byte{'\n'})
	})
}

func (p *player) bounded(fn func() error) error {
	errc := make(chan error, 1)
	go func() { errc <- fn() }()
	select {
	case err := <-errc:
		return err
	case <-p.deadline:
		return errors.New("timed out sending (is the server still reading?)")
	}
}

// inbox collects the server's messages as they arrive.
type inbox struct {
	mu      sync.Mutex
	msgs    [][]byte
	ended   bool
	err     error
	changed chan struct{}
}

func newInbox() *inbox { return &inbox{changed: make(chan struct{})} }

func (in *inbox) add(m []byte) {
	in.mu.Lock()
	in.msgs = append(in.msgs, m)
	close(in.changed)
	in.changed = make(chan struct{})
	in.mu.Unlock()
}

func (in *inbox) end(err error) {
	in.mu.Lock()
	in.ended = true
	if !errors.Is(err, io.EOF) {
		in.err = err
	}
	close(in.changed)
	in.changed = make(chan struct{})
	in.mu.Unlock()
}

func (in *inbox) isEnded() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.ended
}

func (in *inbox) recvErr() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.err
}

func (in *inbox) snapshot() [][]byte {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.msgs)
}

// wait blocks until cond holds for the messages so far or the deadline.
func (in *inbox) wait(deadline <-chan time.Time, cond func(msgs [][]byte, ended bool) bool) error {
	for {
		in.mu.Lock()
		msgs, ended, changed := in.msgs, in.ended, in.changed
		in.mu.Unlock()
		if cond(msgs, ended) {
			return nil
		}
		if ended {
			return errors.New("the server's output ended first")
		}
		select {
		case <-changed:
		case <-deadline:
			return errors.New("timed out")
		}
	}
}
