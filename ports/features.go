package ports

import (
	"context"
	"encoding/json"
	"errors"
)

// ServerFeatures is the optional interface of a [Session] that serves MCP's
// other server features beside tools: resources, prompts and argument
// completion (docs/SPEC.md §2). The engine reads it once, when it is built,
// and advertises and serves exactly the features whose port is non-nil; a
// session without it (every library session that does not opt in) is
// served tools only, as before. A decorator answers for what it wraps
// (FeaturesOf of its inner session), so a wrapped session's resources
// survive the wrapping.
type ServerFeatures interface {
	Session
	Features() Features
}

// Features are the server features a session serves beside tools; a nil
// port is a feature not served (its methods are -32601).
type Features struct {
	Resources Resources
	Prompts   Prompts
	Completer Completer
	// Subscriber serves subscriptions to the resources of Resources
	// (served only with Resources): resources/subscribe and unsubscribe
	// in the legacy era, subscriptions/listen's resourceSubscriptions on
	// 2026-07-28 (docs/SPEC.md §2 "Subscriptions").
	Subscriber ResourceSubscriber
}

// FeaturesOf returns what s serves beside tools: its Features when it
// implements [ServerFeatures], none otherwise.
func FeaturesOf(s Session) Features {
	if f, ok := s.(ServerFeatures); ok {
		return f.Features()
	}
	return Features{}
}

// ErrResourceNotFound marks a resources/read of a URI the session has no
// resource for. The engine answers it -32602 with data.uri, in both eras
// (SEP-2164, docs/SPEC.md §2). Wrap it (fmt.Errorf("%w: ...")) or return
// it as is; the wrapping text, when any, is the client-visible message.
var ErrResourceNotFound = errors.New("resource not found")

// Resources serves MCP resources (https://modelcontextprotocol.io/specification/2025-11-25/server/resources).
// Methods are called concurrently; principal is who asks (the zero
// Principal on a local carrier, docs/SPEC.md §5.3): a session that keeps
// per-user resources shows each principal only its own. Error messages
// are client-visible (their first line, at most 500 bytes).
type Resources interface {
	// ListResources returns the concrete resources principal may read, in
	// a stable order (the engine pages them).
	ListResources(ctx context.Context, principal Principal) ([]Resource, error)
	// ResourceTemplates returns the session's URI templates (RFC 6570), in
	// a stable order.
	ResourceTemplates(ctx context.Context, principal Principal) ([]ResourceTemplate, error)
	// ReadResource returns the contents of uri (one or more; never none).
	// An unknown uri is [ErrResourceNotFound]; a refusal (outside the
	// workspace, too large, not a regular file) wraps [ErrRefused]; both
	// are -32602, anything else -32603.
	ReadResource(ctx context.Context, uri string, principal Principal) ([]ResourceContents, error)
}

// ResourceSubscriber watches resources for the clients that subscribed
// to them (https://modelcontextprotocol.io/specification/2025-11-25/server/resources#subscriptions,
// and subscriptions/listen's resourceSubscriptions on 2026-07-28). The
// engine holds each subscription for its connection (a stream, or one
// subscriptions/listen request), bounds how many one connection holds,
// ends them with the connection, and sends notifications/resources/updated
// for them (docs/SPEC.md §2 "Subscriptions"). Methods are called
// concurrently.
type ResourceSubscriber interface {
	// SubscribeResource starts watching the resource uri names for
	// principal. updated is called, from any goroutine, each time the
	// resource changes (its content written, the file replaced or
	// removed); the session may fold a burst of changes into one call.
	// updated returns at once (the engine marks the subscription pending
	// and its own writer sends the notification), so the session may call
	// it holding its own locks. The returned cancel ends the subscription
	// and releases what it held; once cancel has returned, updated is not
	// called again. The engine calls cancel exactly once.
	//
	// Errors are those of ReadResource: an unknown uri is
	// [ErrResourceNotFound], a refusal (outside the workspace, a link, not
	// a regular file) wraps [ErrRefused] — both -32602 with data.uri, and
	// nothing is held — anything else -32603.
	SubscribeResource(ctx context.Context, uri string, principal Principal, updated func()) (cancel func(), err error)
}

// Resource is one entry of resources/list. URI and Name are required;
// Size is in bytes, -1 when unknown; Meta, when set, is its _meta object
// (JSON text: an MCP App view's _meta.ui, docs/SPEC.md §2 "The turn view").
type Resource struct {
	URI, Name, Title, Description, MIMEType string
	Size                                    int64
	Meta                                    json.RawMessage
}

// ResourceTemplate is one entry of resources/templates/list: URITemplate
// is an RFC 6570 template; Name is required.
type ResourceTemplate struct {
	URITemplate, Name, Title, Description, MIMEType string
}

// ResourceContents is one element of a resources/read result, or the
// resource of an embedded-resource prompt content: Text when Blob is nil,
// otherwise Blob (sent base64-encoded). Meta, when set, is its _meta
// object (JSON text: an MCP App view's _meta.ui.csp, docs/SPEC.md §2 "The
// turn view").
type ResourceContents struct {
	URI, MIMEType string
	Text          string
	Blob          []byte
	Meta          json.RawMessage
}

// Prompts serves MCP prompts (https://modelcontextprotocol.io/specification/2025-11-25/server/prompts),
// the templates a client shows as slash commands. Concurrency, principal
// and errors as for [Resources].
type Prompts interface {
	// ListPrompts returns the prompts principal may get, in a stable order.
	ListPrompts(ctx context.Context, principal Principal) ([]Prompt, error)
	// GetPrompt renders prompt name with args. An unknown name or a
	// missing required argument is an error wrapping [ErrInvalidPrompt]
	// (-32602); anything else -32603.
	GetPrompt(ctx context.Context, name string, args map[string]string, principal Principal) (PromptResult, error)
}

// ErrInvalidPrompt marks a prompts/get the session refuses for its
// parameters: an unknown prompt, a missing required argument (-32602).
var ErrInvalidPrompt = errors.New("Invalid params") //nolint:staticcheck // the -32602 message head, as jsonrpc.InvalidParams writes it

// Prompt is one entry of prompts/list; Name is required.
type Prompt struct {
	Name, Title, Description string
	Arguments                []PromptArgument
}

// PromptArgument is one argument a prompt takes.
type PromptArgument struct {
	Name, Title, Description string
	Required                 bool
}

// PromptResult is a prompts/get result.
type PromptResult struct {
	Description string
	Messages    []PromptMessage
}

// PromptMessage is one message of a prompt: Role is "user" or
// "assistant".
type PromptMessage struct {
	Role    string
	Content PromptContent
}

// PromptContent is one content block: Type "text" (Text), "image" or
// "audio" (Data, sent base64-encoded, with MIMEType), or "resource"
// (Resource, an embedded resource).
type PromptContent struct {
	Type     string
	Text     string
	Data     []byte
	MIMEType string
	Resource *ResourceContents
}

// Completer answers completion/complete
// (https://modelcontextprotocol.io/specification/2025-11-25/server/utilities/completion).
type Completer interface {
	// Complete suggests values for one argument of a prompt or resource
	// template. The engine sends at most 100 values (MCP's bound) and sets
	// hasMore when there were more. An unknown reference is an error
	// wrapping [ErrInvalidPrompt] or [ErrResourceNotFound] (-32602).
	Complete(ctx context.Context, req CompletionRequest, principal Principal) (Completion, error)
}

// CompletionRequest is what completion/complete asks: Ref is "ref/prompt"
// (Name set) or "ref/resource" (URI set, a template); Argument and Value
// the argument being completed and what the person has typed; Context the
// values already given for the other arguments (nil when none).
type CompletionRequest struct {
	RefType, Name, URI string
	Argument, Value    string
	Context            map[string]string
}

// Completion is a completion/complete answer: Values in order of
// preference; Total the number of matches when known (0: unknown).
type Completion struct {
	Values []string
	Total  int
}
