// Package porttest is the contract test of [ports.Session] (docs/SPEC.md §1). Every
// Session implementation runs it from its own tests:
//
//	func TestContract(t *testing.T) {
//		porttest.TestSession(t, func(t *testing.T) porttest.Fixture {
//			s := newSessionForTest(t)
//			return porttest.Fixture{Session: s, ReadOnly: ..., Cancellable: ...}
//		})
//	}
//
// It proves what a carrier relies on: RuntimeTools answers the same valid
// catalog every time; a read-only call succeeds without prompting; calls are
// safe to run concurrently; cancelling a call's ctx reaches the tool and ends
// the call, after which the session still serves; a denied permission (a
// closed Caller or a deny) fails the call with no side effect; prompts reach
// only the Caller of the call that raised them, and background-agent prompts
// only the Caller of the running turn; each submission gets its own turn's
// response or a refusal that wraps [ports.ErrRefused]; no Caller is used after
// its call has returned.
//
// The suite synchronises through the Callers it hands to the session (it holds
// a call inside Progress or RequestPermission), never by sleeping. Time only
// bounds how long it waits before declaring a failure ([Fixture.Patience]).
//
// Limits, by construction: concurrent submissions are released together but
// their overlap is not forced (the suite cannot see inside Submit), so a
// correlation bug that needs a precise interleaving may pass a run; and work
// left running after a call returns is caught only when it touches the
// call's Caller before the check ends.
package porttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// Call is one runtime-tool call: a tool name and its arguments (a JSON
// object; nil means {}).
type Call struct {
	Tool      string
	Arguments json.RawMessage
}

// Fixture is one fresh session under test and what the suite needs to know
// about it. Each check gets its own Fixture, so checks may leave state behind.
type Fixture struct {
	// Session is the session under test; required.
	Session ports.Session

	// ReadOnly is a call that succeeds without raising any prompt; required.
	ReadOnly Call

	// Cancellable is a call that reports progress through its Caller at
	// least once and still has work to do after its first report; required.
	// The suite cancels the call's ctx inside that first Progress (the call
	// must then end with an error or a failed envelope), or holds the call
	// there while it runs other calls beside it. An ordinary slow call
	// serves: the session needs no test hook.
	Cancellable Call

	// Guarded is a call that asks permission through its Caller
	// (RequestPermission with Tool == Guarded.Tool and no Agent) and has a
	// side effect only when allowed. Optional: when Tool is "", the
	// permission checks are skipped.
	Guarded Call

	// SideEffect reports whether Guarded's side effect has happened on this
	// fixture's session; required with Guarded.
	SideEffect func() bool

	// Turn, when set, makes the i-th prompt (i from 0) and the response its
	// turn must give; distinct i give distinct responses. Nil declares a
	// session that runs no turns: every Submit must then be refused.
	Turn func(i int) (prompt, response string)

	// BackgroundPrompt, when not "", is a prompt whose turn starts a
	// background agent that raises at least one prompt (Agent set) while
	// the turn runs, and whose turn ends once that prompt is answered
	// (denied). Optional.
	BackgroundPrompt string

	// Patience bounds every wait for the session before the suite reports a
	// failure (a hung call, a prompt that never comes). Zero means 10 s. It
	// never paces the suite: a check that passes waits for nothing.
	Patience time.Duration
}

// TestSession runs every check as a subtest, each on a fresh fixture from
// newFixture. Checks the fixture cannot support (no Guarded call, no
// BackgroundPrompt) are skipped.
func TestSession(t *testing.T, newFixture func(t *testing.T) Fixture) {
	t.Helper()
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, newFixture(t))
		})
	}
}

// checks are the suite, in the order TestSession runs them. Each takes a
// testing.TB so that porttest's own tests can run it against a recorder and
// see it fail on a broken session.
var checks = []struct {
	name string
	run  func(testing.TB, Fixture)
}{
	{"RuntimeTools", checkRuntimeTools},
	{"ReadOnly", checkReadOnly},
	{"ConcurrentCalls", checkConcurrentCalls},
	{"Cancellation", checkCancellation},
	{"ClosedCallerDenies", checkClosedCallerDenies},
	{"AllowOnce", checkAllowOnce},
	{"PromptsReachOnlyTheirCaller", checkPromptsReachOnlyTheirCaller},
	{"OwnTurn", checkOwnTurn},
	{"BackgroundPrompts", checkBackgroundPrompts},
}

// run is one check's state: the fixture and every Caller handed out, so that
// late uses can be reported when the check ends.
type run struct {
	t        testing.TB
	f        Fixture
	patience time.Duration

	mu      sync.Mutex // guards callers
	callers []*Recorder
}

func begin(t testing.TB, f Fixture) *run {
	t.Helper()
	if f.Session == nil {
		t.Fatal("porttest: Fixture.Session is nil")
	}
	if f.ReadOnly.Tool == "" || f.Cancellable.Tool == "" {
		t.Fatal("porttest: Fixture.ReadOnly and Fixture.Cancellable are required")
	}
	if f.Guarded.Tool != "" && f.SideEffect == nil {
		t.Fatal("porttest: Fixture.SideEffect is required with Fixture.Guarded")
	}
	r := &run{t: t, f: f, patience: f.Patience}
	if r.patience <= 0 {
		r.patience = 10 * time.Second
	}
	t.Cleanup(r.reportLateUse)
	return r
}

// caller returns a fresh recording Caller registered with the run.
func (r *run) caller(name string) *Recorder {
	c := &Recorder{Name: name}
	r.mu.Lock()
	r.callers = append(r.callers, c)
	r.mu.Unlock()
	return c
}

// reportLateUse fails the check for every Caller used after its call
// returned: work the session left running (a leak) that touched the Caller
// before the check ended.
func (r *run) reportLateUse() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.callers {
		if late := c.LateUses(); len(late) > 0 {
			r.t.Errorf("the Caller of call %q was used after its call returned (work left running?): %s", c.Name, strings.Join(late, "; "))
		}
	}
}

// outcome is what one InvokeTool or Submit returned.
type outcome struct {
	env  domain.Envelope
	turn ports.TurnResult
	err  error
}

func (o outcome) failed() bool  { return o.err != nil || !o.env.Success }
func (o outcome) refused() bool { return errors.Is(o.err, ports.ErrRefused) }

func (o outcome) String() string {
	if o.err != nil {
		return fmt.Sprintf("error %q", o.err)
	}
	b, _ := json.Marshal(o.env)
	return "envelope " + string(b)
}

// invoke starts one tool call and delivers its outcome; c is finished (marked
// returned) as soon as InvokeTool returns.
func (r *run) invoke(ctx context.Context, call Call, c ports.Caller) <-chan outcome {
	ch := make(chan outcome, 1)
	args := call.Arguments
	if args == nil {
		args = json.RawMessage(`{}`)
	}
	go func() {
		env, err := r.f.Session.InvokeTool(ctx, call.Tool, args, c)
		if rc, ok := c.(*Recorder); ok {
			rc.Finish()
		}
		ch <- outcome{env: env, err: err}
	}()
	return ch
}

// submit starts one submission and delivers its outcome.
func (r *run) submit(ctx context.Context, prompt string, c *Recorder, start <-chan struct{}) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		if start != nil {
			<-start
		}
		res, err := r.f.Session.Submit(ctx, ports.Submission{Prompt: prompt}, c)
		c.Finish()
		ch <- outcome{turn: res, err: err}
	}()
	return ch
}

// await waits for v or fails the check after the patience.
func await[T any](r *run, ch <-chan T, what string) T {
	r.t.Helper()
	timer := time.NewTimer(r.patience)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		r.t.Fatalf("gave up after %v waiting for %s", r.patience, what)
		panic("unreachable")
	}
}

// awaitSignal waits for signal, raised from inside the call. The call may
// also have ended by then: ended reports it, with its outcome. A call that
// ends without raising signal fails the check with why.
func (r *run) awaitSignal(signal <-chan struct{}, call <-chan outcome, what, why string) (o outcome, ended bool) {
	r.t.Helper()
	timer := time.NewTimer(r.patience)
	defer timer.Stop()
	select {
	case <-signal:
		return outcome{}, false
	case o = <-call:
		select {
		case <-signal:
			return o, true
		default:
		}
		r.t.Fatalf("the call ended (%v) before %s: %s", o, what, why)
	case <-timer.C:
		r.t.Fatalf("gave up after %v waiting for %s", r.patience, what)
	}
	panic("unreachable")
}

// awaitCall waits for a call that awaitSignal may already have seen end.
func (r *run) awaitCall(call <-chan outcome, o outcome, ended bool, what string) outcome {
	r.t.Helper()
	if ended {
		return o
	}
	return await(r, call, what)
}

func checkRuntimeTools(t testing.TB, f Fixture) {
	r := begin(t, f)
	first, err := f.Session.RuntimeTools(t.Context())
	if err != nil {
		t.Fatalf("RuntimeTools: %v", err)
	}
	second, err := f.Session.RuntimeTools(t.Context())
	if err != nil {
		t.Fatalf("RuntimeTools (second call): %v", err)
	}
	if len(first) == 0 {
		t.Error("RuntimeTools returned no tools")
	}
	if !sameTools(first, second) {
		t.Errorf("RuntimeTools is not stable: two calls returned\n%s\nand\n%s", toolNames(first), toolNames(second))
	}
	submit, _ := domain.SubmitTool{}.Resolve()
	if _, err := domain.NewCatalog(first, submit); err != nil {
		t.Errorf("RuntimeTools returned an invalid catalog: %v", err)
	}
	for _, name := range []string{r.f.ReadOnly.Tool, r.f.Cancellable.Tool, r.f.Guarded.Tool} {
		if name != "" && !strings.Contains(" "+toolNames(first)+" ", " "+name+" ") {
			t.Errorf("the fixture's tool %q is not among the runtime tools %s", name, toolNames(first))
		}
	}
}

func sameTools(a, b []domain.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || !bytes.Equal(a[i].InputSchema, b[i].InputSchema) {
			return false
		}
	}
	return true
}

func toolNames(tools []domain.Tool) string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return strings.Join(names, " ")
}

func checkReadOnly(t testing.TB, f Fixture) {
	r := begin(t, f)
	c := r.caller("read-only")
	o := await(r, r.invoke(t.Context(), f.ReadOnly, c), "the ReadOnly call")
	if o.failed() {
		t.Fatalf("ReadOnly call %s failed: %v", f.ReadOnly.Tool, o)
	}
	checkEnvelope(t, f.ReadOnly.Tool, o.env)
	if p := c.Prompts(); len(p) > 0 {
		t.Errorf("the ReadOnly call raised prompts: %s", strings.Join(p, "; "))
	}
}

// checkEnvelope checks what the port promises of any envelope.
func checkEnvelope(t testing.TB, tool string, e domain.Envelope) {
	t.Helper()
	if e.ToolName != "" && e.ToolName != tool {
		t.Errorf("envelope toolName = %q, want %q or absent", e.ToolName, tool)
	}
	if e.Result != nil && !json.Valid(e.Result) {
		t.Errorf("envelope result is not JSON: %q", e.Result)
	}
	if m := bytes.TrimSpace(e.Metadata); m != nil && (len(m) == 0 || m[0] != '{' || !json.Valid(m)) {
		t.Errorf("envelope metadata is not a JSON object: %q", e.Metadata)
	}
	if e.Duration != nil && *e.Duration < 0 {
		t.Errorf("envelope duration = %v ms, want >= 0", *e.Duration)
	}
	if _, err := domain.RenderEnvelope(e); err != nil {
		t.Errorf("envelope cannot be rendered: %v", err)
	}
}

// checkConcurrentCalls runs several ReadOnly calls at once (run it with
// -race): each succeeds or is refused.
func checkConcurrentCalls(t testing.TB, f Fixture) {
	r := begin(t, f)
	const n = 8
	start := make(chan struct{})
	results := make([]<-chan outcome, n)
	for i := range results {
		ch := make(chan outcome, 1)
		c := r.caller(fmt.Sprintf("read-only #%d", i))
		go func() {
			<-start
			ch <- <-r.invoke(t.Context(), f.ReadOnly, c)
		}()
		results[i] = ch
	}
	close(start)
	for i, ch := range results {
		if o := await(r, ch, "concurrent ReadOnly calls"); o.failed() && !o.refused() {
			t.Errorf("concurrent ReadOnly call #%d: %v; want success or a refusal (ports.ErrRefused)", i, o)
		}
	}
}

// checkCancellation cancels the Cancellable call inside its first progress
// report: the call must end failed, and the session must serve afterwards.
func checkCancellation(t testing.TB, f Fixture) {
	r := begin(t, f)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	reported := make(chan struct{})
	var once sync.Once
	c := r.caller("cancellable")
	c.OnProgress = func(context.Context) {
		once.Do(func() {
			cancel()
			close(reported)
		})
	}
	call := r.invoke(ctx, f.Cancellable, c)
	o, ended := r.awaitSignal(reported, call, "its first progress report",
		"Fixture.Cancellable must report progress and then keep working")
	o = r.awaitCall(call, o, ended, "the Cancellable call to end after its ctx was cancelled")
	if !o.failed() {
		t.Errorf("the Cancellable call succeeded although its ctx was cancelled at its first progress report (%v): cancellation did not reach the tool", o)
	}

	after := await(r, r.invoke(t.Context(), f.ReadOnly, r.caller("read-only after cancel")), "a ReadOnly call after the cancellation")
	if after.failed() {
		t.Errorf("after a cancelled call the session no longer serves: ReadOnly call %v", after)
	}
}

func checkClosedCallerDenies(t testing.TB, f Fixture) {
	r := begin(t, f)
	if f.Guarded.Tool == "" {
		t.Skip("the fixture has no Guarded call")
	}
	if f.SideEffect() {
		t.Fatal("SideEffect reports the side effect before any call")
	}
	o := await(r, r.invoke(t.Context(), f.Guarded, ports.ClosedCaller{}), "the Guarded call with a closed Caller")
	if !o.failed() {
		t.Errorf("the Guarded call succeeded with a closed Caller: %v", o)
	}
	if !o.refused() && o.err == nil {
		checkEnvelope(t, f.Guarded.Tool, o.env)
	}
	if f.SideEffect() {
		t.Error("the Guarded call had its side effect although a closed Caller denied permission")
	}
}

// checkAllowOnce lets the Guarded call run. It proves SideEffect can see the
// effect, without which the denial checks would prove nothing.
func checkAllowOnce(t testing.TB, f Fixture) {
	r := begin(t, f)
	if f.Guarded.Tool == "" {
		t.Skip("the fixture has no Guarded call")
	}
	c := r.caller("guarded, allowed")
	c.Allow = true
	o := await(r, r.invoke(t.Context(), f.Guarded, c), "the allowed Guarded call")
	if o.failed() {
		t.Fatalf("the Guarded call failed although permission was allowed: %v", o)
	}
	checkEnvelope(t, f.Guarded.Tool, o.env)
	if !f.SideEffect() {
		t.Error("SideEffect reports nothing after an allowed Guarded call: it cannot see the effect")
	}
	checkOwnPermission(t, f.Guarded.Tool, c)
}

// checkOwnPermission checks that c got the Guarded call's own permission
// prompt and nothing else.
func checkOwnPermission(t testing.TB, tool string, c *Recorder) {
	t.Helper()
	perms, asks := c.Requests()
	found := false
	for _, p := range perms {
		if p.Tool != tool || p.Agent != "" {
			t.Errorf("the Guarded call's Caller got a prompt that is not its own: %+v", p)
		}
		found = found || p.Tool == tool
	}
	if !found {
		t.Errorf("the Guarded call did not ask permission through its own Caller (got %d permission prompts, %d asks)", len(perms), len(asks))
	}
}

// checkPromptsReachOnlyTheirCaller raises the Guarded call's prompt while
// another call is in flight, and runs a read-only call while the Guarded
// call waits for its answer: no prompt may reach the other call's Caller.
func checkPromptsReachOnlyTheirCaller(t testing.TB, f Fixture) {
	r := begin(t, f)
	if f.Guarded.Tool == "" {
		t.Skip("the fixture has no Guarded call")
	}

	// A bystander held inside its first progress report.
	bystander, done := r.hold(f.Cancellable, "bystander")
	g := r.caller("guarded")
	o := await(r, r.invoke(t.Context(), f.Guarded, g), "the Guarded call beside a bystander")
	done()
	switch {
	case o.refused():
		t.Logf("the Guarded call was refused beside a bystander call: %v", o)
	case !o.failed():
		t.Errorf("the Guarded call succeeded although its Caller denied: %v", o)
	default:
		checkOwnPermission(t, f.Guarded.Tool, g)
	}
	if p := bystander.Prompts(); len(p) > 0 {
		t.Errorf("another call's prompt reached a bystander call's Caller: %s", strings.Join(p, "; "))
	}

	// The Guarded call held inside its prompt while a read-only call runs.
	asking := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	g2 := r.caller("guarded, held")
	g2.OnPermission = func(ctx context.Context, _ domain.PermissionPrompt) {
		once.Do(func() { close(asking) })
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	guarded := r.invoke(t.Context(), f.Guarded, g2)
	go2, ended := r.awaitSignal(asking, guarded, "the Guarded call's permission prompt", "Fixture.Guarded must ask permission through its Caller")
	ro := r.caller("read-only beside a prompt")
	if o := await(r, r.invoke(t.Context(), f.ReadOnly, ro), "a ReadOnly call beside a pending prompt"); o.failed() && !o.refused() {
		t.Errorf("ReadOnly call beside a pending prompt: %v; want success or a refusal", o)
	}
	close(release)
	if o := r.awaitCall(guarded, go2, ended, "the held Guarded call"); !o.failed() {
		t.Errorf("the Guarded call succeeded although its Caller denied: %v", o)
	}
	if p := ro.Prompts(); len(p) > 0 {
		t.Errorf("a prompt reached the Caller of a read-only call that raised none: %s", strings.Join(p, "; "))
	}
	checkOwnPermission(t, f.Guarded.Tool, g2)
	if f.SideEffect() {
		t.Error("a denied Guarded call had its side effect")
	}
}

// hold starts the Cancellable call and holds it inside its first progress
// report until done is called; done cancels it and waits for it to end.
func (r *run) hold(call Call, name string) (c *Recorder, done func()) {
	r.t.Helper()
	ctx, cancel := context.WithCancel(r.t.Context())
	held := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	c = r.caller(name)
	c.OnProgress = func(pctx context.Context) {
		once.Do(func() {
			close(held)
			select {
			case <-release:
			case <-pctx.Done():
			}
		})
	}
	ch := r.invoke(ctx, call, c)
	o, ended := r.awaitSignal(held, ch, "the Cancellable call's first progress report",
		"Fixture.Cancellable must report progress and then keep working")
	return c, func() {
		r.t.Helper()
		cancel()
		close(release)
		r.awaitCall(ch, o, ended, "the held Cancellable call to end after its ctx was cancelled")
	}
}

// checkOwnTurn submits one prompt alone, then pairs of prompts at once: each
// submission gets its own turn's response or a refusal.
func checkOwnTurn(t testing.TB, f Fixture) {
	r := begin(t, f)
	if f.Turn == nil {
		start := make(chan struct{})
		a := r.submit(t.Context(), "porttest: first prompt", r.caller("submit #1"), start)
		b := r.submit(t.Context(), "porttest: second prompt", r.caller("submit #2"), start)
		close(start)
		for i, ch := range []<-chan outcome{a, b} {
			if o := await(r, ch, "a submission"); !o.refused() {
				t.Errorf("submission #%d to a session without turns (Fixture.Turn nil) = %+v, %v; want a refusal (ports.ErrRefused)", i+1, o.turn, o.err)
			}
		}
		return
	}

	prompt, want := f.Turn(0)
	o := await(r, r.submit(t.Context(), prompt, r.caller("lone submit"), nil), "a lone submission")
	if o.err != nil || o.turn.Response != want {
		t.Fatalf("lone Submit(%q) = %q, %v; want %q", prompt, o.turn.Response, o.err, want)
	}

	const rounds = 4
	served := 0
	for round := range rounds {
		start := make(chan struct{})
		var prompts, wants [2]string
		var results [2]<-chan outcome
		for k := range 2 {
			prompts[k], wants[k] = f.Turn(1 + 2*round + k)
			results[k] = r.submit(t.Context(), prompts[k], r.caller(fmt.Sprintf("submit %d.%d", round, k)), start)
		}
		close(start)
		for k := range 2 {
			o := await(r, results[k], "concurrent submissions")
			switch {
			case o.refused():
			case o.err != nil:
				t.Errorf("concurrent Submit(%q): %v; want its response or a refusal (ports.ErrRefused)", prompts[k], o.err)
			case o.turn.Response == wants[1-k]:
				t.Errorf("concurrent Submit(%q) got the other turn's response %q", prompts[k], o.turn.Response)
			case o.turn.Response != wants[k]:
				t.Errorf("concurrent Submit(%q) = %q, want %q", prompts[k], o.turn.Response, wants[k])
			default:
				served++
			}
		}
	}
	if served == 0 {
		t.Errorf("every concurrent submission was refused over %d rounds: a pair should get at least one turn", rounds)
	}
}

// checkBackgroundPrompts runs the BackgroundPrompt turn while a tool call is
// in flight: the background agent's prompt must reach the turn's Caller and
// not the tool call's.
func checkBackgroundPrompts(t testing.TB, f Fixture) {
	r := begin(t, f)
	if f.BackgroundPrompt == "" {
		t.Skip("the fixture has no BackgroundPrompt")
	}
	bystander, done := r.hold(f.Cancellable, "bystander")
	turn := r.caller("turn")
	o := await(r, r.submit(t.Context(), f.BackgroundPrompt, turn, nil), "the background-agent turn")
	done()
	if p := bystander.Prompts(); len(p) > 0 {
		t.Errorf("a prompt reached the Caller of a tool call running beside the turn: %s", strings.Join(p, "; "))
	}
	if o.refused() {
		t.Logf("the background-agent turn was refused beside a tool call (%v); running it alone", o.err)
		turn = r.caller("turn, alone")
		o = await(r, r.submit(t.Context(), f.BackgroundPrompt, turn, nil), "the background-agent turn, alone")
		if o.refused() {
			t.Fatalf("the background-agent turn was refused with no other call in flight: %v", o.err)
		}
	}
	perms, asks := turn.Requests()
	agents := 0
	for _, p := range perms {
		if p.Agent != "" {
			agents++
		}
	}
	for _, a := range asks {
		if a.Agent != "" {
			agents++
		}
	}
	if agents == 0 {
		t.Errorf("no background-agent prompt reached the running turn's Caller (turn result %+v, %v)", o.turn, o.err)
	}
}
