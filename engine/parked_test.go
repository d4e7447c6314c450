package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"
)

// promptCtx is a context a library session may ask on (the ports.Caller
// contract allows any): the call's own, one shorter than the round lifetime
// (under the call's or detached from it), one longer than the call's,
// context.Background, or one already cancelled.
type promptCtx string

const (
	onCall      promptCtx = "call"
	onShort     promptCtx = "short"
	onShortFree promptCtx = "short-detached"
	onLong      promptCtx = "long"
	onBack      promptCtx = "background"
	onCancelled promptCtx = "cancelled"
)

var promptCtxs = []promptCtx{onCall, onShort, onShortFree, onLong, onBack, onCancelled}

// shortPrompt is how long a short prompt waits: far less than the round
// lifetime, so the session gives up while its round is parked.
const shortPrompt = time.Second

func (k promptCtx) make(call context.Context) (context.Context, context.CancelFunc) {
	switch k {
	case onShort:
		return context.WithTimeout(call, shortPrompt)
	case onShortFree:
		return context.WithTimeout(context.Background(), shortPrompt)
	case onLong:
		return context.WithTimeout(context.WithoutCancel(call), 2*time.Hour)
	case onBack:
		return context.Background(), func() {}
	case onCancelled:
		ctx, cancel := context.WithCancel(call)
		cancel()
		return ctx, cancel
	}
	return call, func() {}
}

// prompter is a session whose write tool raises one permission prompt per
// entry of kinds, each on a context of that kind, and returns how many were
// allowed as its result.
type prompter struct {
	*fake.Session
	kinds    []promptCtx
	returned chan struct{} // closed when the write call has returned
}

func newPrompter(kinds ...promptCtx) *prompter {
	return &prompter{Session: fake.New(), kinds: kinds, returned: make(chan struct{})}
}

func (s *prompter) InvokeTool(ctx context.Context, name string, args json.RawMessage, caller ports.Caller) (domain.Envelope, error) {
	if name != "write" {
		return s.Session.InvokeTool(ctx, name, args, caller)
	}
	defer close(s.returned)
	allowed := 0
	for _, k := range s.kinds {
		pctx, cancel := k.make(ctx)
		if caller.RequestPermission(pctx, domain.PermissionPrompt{Tool: name}) == domain.AllowOnce {
			allowed++
		}
		cancel()
	}
	return domain.Envelope{Success: true, ToolName: name, Result: json.RawMessage(strconv.Itoa(allowed))}, nil
}

func repeatKind(k promptCtx, n int) []promptCtx {
	ks := make([]promptCtx, n)
	for i := range ks {
		ks[i] = k
	}
	return ks
}

// promptingEngine returns an engine asking its clients, serving a prompter
// that raises a prompt per kind.
func promptingEngine(t *testing.T, opts engine.Options, kinds ...promptCtx) (*engine.Engine, *prompter) {
	s := newPrompter(kinds...)
	opts.AskClient = true
	e, err := engine.New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e, s
}

// eachSequence runs f in a synctest bubble for every context kind and
// several prompt counts: a session that raises n prompts, all on kind k.
func eachSequence(t *testing.T, f func(t *testing.T, k promptCtx, n int, e *engine.Engine, s *prompter)) {
	for _, k := range promptCtxs {
		for _, n := range []int{1, 2, 3, 5} {
			t.Run(fmt.Sprintf("%s/%d", k, n), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e, s := promptingEngine(t, engine.Options{}, repeatKind(k, n)...)
					f(t, k, n, e, s)
				})
			})
		}
	}
}

// exchangeWrite sends one 2026-07-28 tools/call of write over the HTTP
// carrier's entry point; extra is appended to its params.
func exchangeWrite(ctx context.Context, e *engine.Engine, id int, extra string) engine.Reply {
	body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"write","arguments":{"text":"x"},` + roundMeta + extra + `}}`
	return e.Exchange(ctx, []byte(body), writeHeaders)
}

func decodeReply(t *testing.T, r engine.Reply) map[string]any {
	t.Helper()
	if r.Kind != engine.Answered {
		t.Fatalf("kind %v, body %s: want Answered", r.Kind, r.Body)
	}
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("%s: %v", r.Body, err)
	}
	return m
}

// TestShutdownEndsAParkedCallWhateverItsPromptsContexts: a session that
// raises any number of prompts, each on any context, never leaves its call
// blocked: once nobody retries, Shutdown returns (docs/SPEC.md §6). Before
// the fix, prompts raised after the first round's context ended filled the
// call's event channel and the next send blocked for ever.
func TestShutdownEndsAParkedCallWhateverItsPromptsContexts(t *testing.T) {
	eachSequence(t, func(t *testing.T, _ promptCtx, _ int, e *engine.Engine, s *prompter) {
		decodeReply(t, exchangeWrite(context.Background(), e, 1, ""))
		time.Sleep(time.Minute) // short prompts lapse while the round is parked
		synctest.Wait()
		stopped := make(chan error, 1)
		go func() { stopped <- e.Shutdown(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-stopped:
			if err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		default:
			t.Fatal("Shutdown is blocked: a parked call never returned")
		}
		select {
		case <-s.returned:
		default:
			t.Error("the session's call did not return")
		}
	})
}

// TestRetriesDriveEveryPromptSequenceToItsResult: whatever contexts the
// session asks on, each retry (answering allow_once) gets the call's next
// round or its result. A prompt the session gave up on leaves its round
// standing for the call: the retry's answer to it is dropped and the retry
// gets what the call does next.
func TestRetriesDriveEveryPromptSequenceToItsResult(t *testing.T) {
	eachSequence(t, func(t *testing.T, k promptCtx, n int, e *engine.Engine, _ *prompter) {
		defer shutdown(t, e)
		m := decodeReply(t, exchangeWrite(context.Background(), e, 1, ""))
		for i := 0; ; i++ {
			r := result(t, m)
			if r["resultType"] == "complete" {
				break
			}
			if i > 2*n+2 {
				t.Fatalf("still input_required after %d retries", i)
			}
			st := state(t, m)
			time.Sleep(time.Minute) // short prompts lapse
			synctest.Wait()
			m = decodeReply(t, exchangeWrite(context.Background(), e, 2+i, allowAnswer(st)))
		}
		want := 0
		if k == onCall || k == onLong || k == onBack {
			want = n // every prompt was still waiting when its answer came
		}
		if got := envelopeOf(t, m); got != `{"success":true,"toolName":"write","result":`+strconv.Itoa(want)+`}` {
			t.Errorf("result %s, want %d allowed", got, want)
		}
	})
}

func allowAnswer(st string) string {
	return `,"requestState":"` + st + `","inputResponses":` + allowOnceAnswer
}

// TestCallDeadlineRunsFromTheLastPark: a call whose prompt the session gave
// up on, and whose next prompt nobody is there to receive, still ends one
// round lifetime after its last park (docs/SPEC.md §6). Before the fix the
// round was dropped with its timer and the call ran unbounded.
func TestCallDeadlineRunsFromTheLastPark(t *testing.T) {
	for _, next := range []promptCtx{onBack, onLong, onCall} {
		t.Run(string(next), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, s := promptingEngine(t, engine.Options{RoundLifetime: 10 * time.Minute}, onShortFree, next)
				defer shutdown(t, e)
				state(t, decodeReply(t, exchangeWrite(context.Background(), e, 1, "")))
				time.Sleep(10*time.Minute + time.Second)
				synctest.Wait()
				select {
				case <-s.returned:
				default:
					t.Error("the call is still running after its deadline")
				}
			})
		})
	}
}

// TestRetryThatDisconnectsEndsTheCall: a 2026-07-28 retry without the
// answer re-parks the call under a new token; when its HTTP client has gone
// before the reply, nobody holds that token, so the call ends at once
// (docs/SPEC.md §6) instead of staying parked for the round lifetime.
func TestRetryThatDisconnectsEndsTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s := promptingEngine(t, engine.Options{}, onCall)
		defer shutdown(t, e)
		st := state(t, decodeReply(t, exchangeWrite(context.Background(), e, 1, "")))
		gone, cancel := context.WithCancel(context.Background())
		cancel() // the client left before the reply could be written
		if r := exchangeWrite(gone, e, 2, `,"requestState":"`+st+`"`); r.Kind != engine.Cancelled || len(r.Body) != 0 {
			t.Fatalf("retry from a client that left: %v %s, want Cancelled", r.Kind, r.Body)
		}
		synctest.Wait()
		select {
		case <-s.returned:
		default:
			t.Error("the call stayed parked under a token nobody holds")
		}
		emptyIndex(t, e) // no round, no request name left
	})
}
