// Package ports declares what agentmcp's core needs from outside and offers to
// its carriers: the Session it serves (docs/SPEC.md §1), the per-call Caller through
// which a session reaches whoever drives a call, the access-token verifier the
// remote host consults (§7) and the audit sink it reports refusals to (§5.3).
//
// Ports import only the domain. Adapters satisfy them implicitly.
package ports

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentmcp/agentmcp/domain"
)

// Session is the driven port: the running agent session served over MCP.
//
// Implementations must be safe for concurrent use: carriers serve requests
// concurrently. Error messages are client-visible (only their first line, at
// most 500 bytes, is sent), so they must not carry secrets.
type Session interface {
	// RuntimeTools returns the session's runtime tools in a stable order.
	// Each InputSchema is a JSON Schema object whose root has "type":"object".
	RuntimeTools(ctx context.Context) ([]domain.Tool, error)

	// InvokeTool runs one runtime tool through the session's permission
	// wrapper and returns its execution envelope. arguments is a JSON object.
	// caller reaches whoever drives this call and no one else. Cancelling ctx
	// cancels only this invocation.
	InvokeTool(ctx context.Context, name string, arguments json.RawMessage, caller Caller) (domain.Envelope, error)

	// Submit runs s.Prompt as a turn and returns that turn's own result,
	// never another caller's. An error wrapping ErrRefused means the
	// submission never became a turn (busy, queue full, shutting down,
	// dropped, a conversation it may not use); any other error failed
	// inside the turn.
	//
	// s.Conversation and s.ForkFrom are set only for a session that
	// implements [ConversationSession] and says so; any other session
	// reads s.Prompt alone (docs/SPEC.md §1).
	Submit(ctx context.Context, s Submission, caller Caller) (TurnResult, error)
}

// TurnResult is the outcome of one submitted turn.
type TurnResult struct {
	Response string // the turn's answer text; "" is a valid answer

	// Report is what the turn did, for the submission's structured result
	// (docs/SPEC.md §9): nil when the session reports none (every session
	// that does not implement [ConversationSession]).
	Report *TurnReport
}

// ErrRefused marks a session error as a refusal: the request never ran (busy,
// queue full, shutting down, dropped before it became a turn). Sessions wrap
// it (fmt.Errorf("%w: ...", ErrRefused) or a type whose Is matches it) so that
// errors.Is sees the kind; docs/SPEC.md §3 maps a refused submission to a tool error
// and any other submission error to JSON-RPC -32603.
var ErrRefused = errors.New("refused")

// Refused returns an error of the refused kind whose message is exactly msg.
func Refused(msg string) error { return refusal(msg) }

type refusal string

func (r refusal) Error() string        { return string(r) }
func (r refusal) Is(target error) bool { return target == ErrRefused }

// Caller is handed to the session for exactly one call (one tools/call or one
// agent_submit) and reaches only whoever drives that call.
//
// A closed Caller (asking the client is off, or the client cannot be asked)
// answers Deny and a cancelled Answer at once, so the session's own permission
// wrapper produces its visible tool error. Methods are safe for concurrent
// use; after the call has finished they answer closed and send nothing.
// RequestPermission and Ask may block for as long as a person takes to
// answer (up to the round lifetime), and Progress may block on a slow
// client: a session must not hold locks across them. Their ctx may be any
// context — the call's, a shorter one (an approval bound), a longer one,
// one already cancelled — and a call may ask any number of times: when ctx
// ends first, that prompt settles closed and the call goes on
// (docs/SPEC.md §6).
type Caller interface {
	// RequestPermission asks to allow one tool call. Anything but an explicit
	// allow-once (decline, cancel, a malformed answer, a timeout, ctx ending)
	// is Deny.
	RequestPermission(ctx context.Context, p domain.PermissionPrompt) domain.Decision

	// Ask asks a question. A masked ask, a cancel or any failure gives an
	// Answer with Answered false.
	Ask(ctx context.Context, p domain.AskPrompt) domain.Answer

	// Progress reports progress of this call: notifications/progress when the
	// request carried a progressToken, nothing otherwise. progress should
	// increase on every call; total <= 0 means unknown; message may be "".
	Progress(ctx context.Context, progress, total float64, message string)

	// Principal is who drives this call: the zero Principal on a local
	// carrier (stdio, the loopback host, a Unix socket), whose one
	// principal is whoever can reach it; on the remote host, the admitted
	// access token's issuer, subject and client (docs/SPEC.md §5.3). A
	// session that keeps state per user (a conversation, docs/SPEC.md §9)
	// keys it by this value, so one principal's state never reaches
	// another's calls. It is in memory only: never log it.
	Principal() Principal
}

// Asking says where a Caller's prompts go (docs/SPEC.md §6), so that a
// session's refusal can say why nobody approved: the person declined, or
// nobody could be asked, and then what would let it through.
type Asking int

const (
	// AskingUnknown: the Caller does not say (it has no Asking method).
	AskingUnknown Asking = iota
	// AskingClient: prompts go to the calling client, where a person
	// answers them; a Deny is that person's (or no answer in time).
	AskingClient
	// AskingOff: prompts settle closed because asking the client is off
	// (engine.Options.AskClient false: agentmcp without --ask-client).
	AskingOff
	// AskingUnable: asking is on, but this client cannot be asked: it
	// declared no form elicitation, or it is a 2025-era client over HTTP.
	AskingUnable
)

// AskingOf reports where caller's prompts go: what its Asking method
// returns, or AskingUnknown when it has none. The engine's Callers have
// one; a Caller that wraps another forwards it.
func AskingOf(caller Caller) Asking {
	if a, ok := caller.(interface{ Asking() Asking }); ok {
		return a.Asking()
	}
	return AskingUnknown
}

// ClosedCaller is the Caller used when the client cannot be asked: it denies,
// cancels, and drops progress.
type ClosedCaller struct{}

func (ClosedCaller) RequestPermission(context.Context, domain.PermissionPrompt) domain.Decision {
	return domain.Deny
}
func (ClosedCaller) Ask(context.Context, domain.AskPrompt) domain.Answer { return domain.Answer{} }
func (ClosedCaller) Progress(context.Context, float64, float64, string)  {}

// Principal is the zero Principal: a closed Caller speaks for nobody in
// particular.
func (ClosedCaller) Principal() Principal { return Principal{} }

var _ Caller = ClosedCaller{}

// TaskStarter is what a Caller offers when its call may still become an MCP
// task (docs/SPEC.md §14, SEP-2663 "Composing with MRTR"): a call of a tool
// marked domain.Tool.TaskStartsInRequest, served in its request. Sessions
// use it through [StartTask].
type TaskStarter interface {
	// StartTask turns the call into a task and reports true: the request
	// waiting for the call is answered with a CreateTaskResult, and from
	// then on the call's prompts are the task's input requests, its
	// progress the task's statusMessage, its outcome the task's, and only
	// tasks/cancel (or the server stopping, or a stream's end) ends its
	// context. It reports true at once when the call already is a task. It
	// reports false, and the call goes on in its request, when that cannot
	// be: no request is waiting for the call (its round is parked), that
	// request did not declare the io.modelcontextprotocol/tasks extension,
	// the tool does not support tasks, the task bounds are reached, or the
	// call has ended (or the server is stopping). A prompt the call raised that no request has shown
	// yet settles closed when it becomes a task.
	StartTask(ctx context.Context) bool
}

// StartTask asks caller to turn its call into a task (see [TaskStarter]);
// false when caller offers no TaskStarter (a call that can never become a
// task) or ctx has ended.
func StartTask(ctx context.Context, caller Caller) bool {
	s, ok := caller.(TaskStarter)
	if !ok || ctx.Err() != nil {
		return false
	}
	return s.StartTask(ctx)
}
