package engine

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// Reply is the engine's answer to one stateless exchange (an HTTP POST
// body): the status the carrier should send and the JSON body (nil for 202).
type Reply struct {
	Status int
	Body   []byte
}

// ExchangeOptions configures [Engine.Exchange].
type ExchangeOptions struct {
	// Headers are the request's MCP headers; nil means none were sent.
	Headers *Headers
	// Notify sends a notification related to this request (progress)
	// before the reply; nil drops them. The carrier decides the framing
	// (Streamable HTTP switches to SSE). Notify may block (back-pressure
	// from a slow client) but must return once ctx ends.
	Notify func(msg []byte)
	// MaxBatch bounds a 2025-03-26 batch; default 16.
	MaxBatch int
	// Principal is who sent the request: the zero Principal on the loopback
	// host, the admitted token's issuer, subject and client on the remote
	// one. It binds input-required rounds (docs/SPEC.md §6: never shared
	// across principals) and is what the session's Caller reports.
	Principal ports.Principal
}

// Exchange serves one stateless exchange: body is one JSON-RPC message or,
// for a 2025-03-26 client, a batch. Legacy requests take their revision from
// MCP-Protocol-Version, 2025-03-26 when it is absent; initialize is answered
// without keeping state. ctx is the request's: when it ends (the client went
// away, or the carrier cancels it with cause [ErrShuttingDown]) the call is
// cancelled. Statuses follow docs/SPEC.md §4: 200 for an answer (JSON-RPC errors to a
// well-formed request included), 202 for notifications and responses, 400
// for invalid bodies and failed modern validation, 404 for a method the
// modern revision does not have.
func (e *Engine) Exchange(ctx context.Context, body []byte, opts ExchangeOptions) Reply {
	if !json.Valid(body) {
		return Reply{400, errorFrame(ID{}, newError(CodeParseError, "Parse error"))}
	}
	switch firstByte(body) {
	case '{':
		status, resp := e.exchangeOne(ctx, body, opts, false)
		return Reply{status, resp}
	case '[':
		return e.exchangeBatch(ctx, body, opts)
	}
	return Reply{400, errorFrame(ID{}, newError(CodeInvalidRequest, "Invalid Request: not a JSON-RPC message"))}
}

func (e *Engine) exchangeBatch(ctx context.Context, body []byte, opts ExchangeOptions) Reply {
	invalid := func(msg string) Reply {
		return Reply{400, errorFrame(ID{}, newError(CodeInvalidRequest, "Invalid Request: "+msg))}
	}
	version := DefaultLegacyVersion
	if h := opts.Headers; h != nil && h.HasProtocolVersion {
		version = headerValue(h.ProtocolVersion)
	}
	max := opts.MaxBatch
	if max <= 0 {
		max = 16
	}
	if !batchesAllowed(version) {
		return invalid("batches are only part of protocol revision 2025-03-26")
	}
	elems, err := splitArray(body)
	switch {
	case err != nil:
		return invalid("not a batch")
	case len(elems) == 0:
		return invalid("empty batch")
	case len(elems) > max:
		return invalid("batch too large")
	}
	out := make([][]byte, len(elems))
	var wg sync.WaitGroup
	for i, el := range elems {
		if firstByte(el) != '{' {
			out[i] = errorFrame(ID{}, newError(CodeInvalidRequest, "Invalid Request: not a JSON-RPC message"))
			continue
		}
		wg.Go(func() { _, out[i] = e.exchangeOne(ctx, el, opts, true) })
	}
	wg.Wait()
	var arr []json.RawMessage
	for _, r := range out {
		if r != nil {
			arr = append(arr, r)
		}
	}
	if len(arr) == 0 {
		return Reply{Status: 202}
	}
	b, _ := domain.MarshalJSON(arr)
	return Reply{200, b}
}

// exchangeOne serves one message; a nil body means nothing to answer (202).
func (e *Engine) exchangeOne(ctx context.Context, frame []byte, opts ExchangeOptions, inBatch bool) (int, []byte) {
	m, derr := decodeMessage(frame)
	if derr != nil {
		if m.hasMth && !m.hasID {
			return 202, nil
		}
		return 400, errorFrame(m.id, derr)
	}
	if !m.isRequest() {
		// Notifications (notifications/cancelled included: over HTTP a
		// disconnect is the cancellation) and responses are accepted.
		return 202, nil
	}
	in, perr := parseParams(m)
	if perr != nil {
		return 400, errorFrame(m.id, perr)
	}
	in.modern = isModern(in, opts.Headers)
	if in.modern {
		if inBatch {
			return 400, errorFrame(in.id, newError(CodeInvalidRequest, "Invalid Request: batches are not part of "+ModernVersion))
		}
		if verr, status := validateModern(in, opts.Headers); verr != nil {
			return status, errorFrame(in.id, verr)
		}
	} else {
		in.version = DefaultLegacyVersion
		if h := opts.Headers; h != nil && h.HasProtocolVersion {
			in.version = headerValue(h.ProtocolVersion)
		}
		switch in.method {
		case "initialize":
			if inBatch {
				return 200, errorFrame(in.id, newError(CodeInvalidRequest, "Invalid Request: initialize must not be part of a batch"))
			}
			if in.params == nil {
				return 200, errorFrame(in.id, newError(CodeInvalidParams, "Invalid params: initialize needs params"))
			}
			v, verr := negotiate(in.params)
			if verr != nil {
				return 200, errorFrame(in.id, verr)
			}
			return 200, encodeResponse(in.id, e.initializeResult(v), nil)
		case "ping":
			return 200, encodeResponse(in.id, emptyResult{}, nil)
		case "tools/list", "tools/call":
		default:
			return 200, errorFrame(in.id, methodNotFound(in.method))
		}
	}
	notify := opts.Notify
	if notify == nil || inBatch {
		notify = nil // batch responses are one JSON array, never SSE
	}
	cc := newCallCaller(in.meta, notify, opts.Principal)
	c := &call{ctx: ctx, caller: cc, req: cc, principal: "http:" + principalKey(opts.Principal)}
	result, rerr := e.dispatch(c, in)
	cc.finish()
	return 200, encodeResponse(in.id, result, rerr)
}
