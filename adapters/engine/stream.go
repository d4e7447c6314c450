package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// StreamOptions configures a Stream; zero values mean the defaults.
type StreamOptions struct {
	// MaxInFlight bounds the requests served at once; beyond it a tools/call
	// gets the tool error "server is busy" and other requests -32603, at once
	// (docs/SPEC.md §4). Default 64. initialize and ping are answered on the reader's
	// goroutine without touching the session, so they never count; at the
	// bound they are refused with -32603 like any other request.
	MaxInFlight int
	// MaxBatch bounds the elements of a 2025-03-26 batch. Default 64.
	MaxBatch int
	// OnWriteError is told of the first failed write (a broken output);
	// later writes are dropped. It must not block.
	OnWriteError func(error)
}

// Stream serves one long-lived bidirectional connection, such as stdio: one
// client, one legacy negotiation, one in-flight id space. The carrier reads
// frames (one JSON text each) and hands them to [Stream.Handle] in order;
// the stream writes every answer and notification through send, one frame per
// call, serialised. Handle never waits for a request to be served, so the
// carrier's reader never blocks on the session.
type Stream struct {
	e      *Engine
	send   func([]byte) error
	opts   StreamOptions
	base   context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup // one per request goroutine

	writeMu  sync.Mutex // serialises send; guards writeErr
	writeErr error

	principal string        // binds this stream's input-required rounds
	inputEnd  chan struct{} // closed by Drain: the client can answer nothing more
	endOnce   sync.Once

	mu        sync.Mutex // guards the fields below
	version   string     // negotiated legacy revision; "" before initialize
	canElicit bool       // negotiated >= 2025-06-18 and declared form elicitation
	inflight  map[string]*flight
	closing   bool
	// pending are our elicitation/create requests awaiting the client's
	// response, by id key; their ids ("srv-<n>") are our own id space.
	pending map[string]chan json.RawMessage
	nextSrv int
	// chains maps the id of a request that answered input_required to the
	// parked call, so notifications/cancelled naming it ends the call.
	chains map[string]*parkedCall
}

// flight is one request being served.
type flight struct {
	ctx       context.Context
	cancel    context.CancelCauseFunc
	cancelled bool // by the client: write nothing for it
}

// errCancelledByClient is the cause of a call the client cancelled.
var errCancelledByClient = errors.New("cancelled by the client")

// NewStream starts serving a stream whose frames are written through send.
// send receives one compact JSON text per call, never concurrently.
func (e *Engine) NewStream(send func([]byte) error, opts StreamOptions) *Stream {
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 64
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 64
	}
	base, cancel := context.WithCancelCause(context.Background())
	return &Stream{
		e: e, send: send, opts: opts, base: base, cancel: cancel,
		principal: fmt.Sprintf("stream:%d", streamIDs.Add(1)),
		inputEnd:  make(chan struct{}),
		inflight:  make(map[string]*flight),
		pending:   make(map[string]chan json.RawMessage),
		chains:    make(map[string]*parkedCall),
	}
}

func (s *Stream) write(b []byte) {
	if b == nil {
		return
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.writeErr != nil {
		return
	}
	if err := s.send(b); err != nil {
		s.writeErr = err
		if s.opts.OnWriteError != nil {
			s.opts.OnWriteError(err)
		}
	}
}

// Oversize answers a frame the carrier refused for its length: -32600 with
// no id (nothing of it was parsed).
func (s *Stream) Oversize() {
	s.write(errorFrame(ID{}, newError(CodeInvalidRequest, "Invalid Request: message exceeds the line limit")))
}

// Handle serves one frame: a JSON-RPC message or, under 2025-03-26, a batch.
// Blank frames are ignored; invalid JSON is answered -32700 with no id.
func (s *Stream) Handle(frame []byte) {
	frame = trimLine(frame)
	if isBlank(frame) {
		return
	}
	if !json.Valid(frame) {
		s.write(errorFrame(ID{}, newError(CodeParseError, "Parse error")))
		return
	}
	switch firstByte(frame) {
	case '{':
		s.handleMessage(frame, s.write, false)
	case '[':
		s.handleBatch(frame)
	default:
		s.write(errorFrame(ID{}, newError(CodeInvalidRequest, "Invalid Request: not a JSON-RPC message")))
	}
}

// legacyVersion is the revision in force for legacy requests: the negotiated
// one, or 2025-03-26 before initialize (docs/SPEC.md §4).
func (s *Stream) legacyVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.version == "" {
		return DefaultLegacyVersion
	}
	return s.version
}

func (s *Stream) handleBatch(frame []byte) {
	invalid := func(msg string) { s.write(errorFrame(ID{}, newError(CodeInvalidRequest, "Invalid Request: "+msg))) }
	if !batchesAllowed(s.legacyVersion()) {
		invalid("batches are only part of protocol revision 2025-03-26")
		return
	}
	elems, err := splitArray(frame)
	switch {
	case err != nil:
		invalid("not a batch")
		return
	case len(elems) == 0:
		invalid("empty batch")
		return
	case len(elems) > s.opts.MaxBatch:
		invalid("batch too large")
		return
	}
	b := &batch{s: s, slots: make([][]byte, len(elems)), pending: len(elems)}
	for i, el := range elems {
		deliver := func(resp []byte) { b.deliver(i, resp) }
		if firstByte(el) != '{' {
			deliver(errorFrame(ID{}, newError(CodeInvalidRequest, "Invalid Request: not a JSON-RPC message")))
			continue
		}
		s.handleMessage(el, deliver, true)
	}
}

// batch collects the answers of one batch and writes them as one array once
// every element is done (docs/SPEC.md §4: batch responses are one JSON array).
type batch struct {
	s       *Stream
	mu      sync.Mutex
	slots   [][]byte
	pending int
}

func (b *batch) deliver(i int, resp []byte) {
	b.mu.Lock()
	b.slots[i] = resp
	b.pending--
	done := b.pending == 0
	b.mu.Unlock()
	if !done {
		return
	}
	var out []json.RawMessage
	for _, r := range b.slots {
		if r != nil {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return // notifications only: no output
	}
	arr, _ := domain.MarshalJSON(out)
	b.s.write(arr)
}

// handleMessage serves one message, alone or as a batch element; deliver
// receives its answer (nil for none).
func (s *Stream) handleMessage(frame []byte, deliver func([]byte), inBatch bool) {
	m, derr := decodeMessage(frame)
	if derr != nil {
		if m.hasMth && !m.hasID {
			deliver(nil) // a notification never gets a reply, not even an error
			return
		}
		deliver(errorFrame(m.id, derr))
		return
	}
	switch {
	case m.isResponse():
		s.response(m)
		deliver(nil)
		return
	case m.isNotification():
		s.notification(m)
		deliver(nil)
		return
	}
	if s.isInFlight(m.id) {
		// docs/SPEC.md §4: a request reusing an id still in flight gets -32600, the
		// first is untouched — whatever its method.
		deliver(errorFrame(m.id, newError(CodeInvalidRequest, "Invalid Request: id is already in flight")))
		return
	}
	in, perr := parseParams(m)
	if perr != nil {
		deliver(errorFrame(m.id, perr))
		return
	}
	in.modern = isModern(in, nil)
	if in.modern {
		if inBatch {
			deliver(errorFrame(in.id, newError(CodeInvalidRequest, "Invalid Request: batches are not part of "+ModernVersion)))
			return
		}
		if verr, _ := validateModern(in, nil); verr != nil {
			deliver(errorFrame(in.id, verr))
			return
		}
	} else {
		in.version = s.legacyVersion()
		if (in.method == "initialize" || in.method == "ping") && s.atBound() {
			deliver(s.e.refusal(in, "server is busy"))
			return
		}
		switch in.method {
		case "initialize":
			if inBatch {
				deliver(errorFrame(in.id, newError(CodeInvalidRequest, "Invalid Request: initialize must not be part of a batch")))
				return
			}
			deliver(s.initialize(in))
			return
		case "ping":
			deliver(encodeResponse(in.id, emptyResult{}, nil))
			return
		case "tools/list", "tools/call":
		default:
			deliver(errorFrame(in.id, methodNotFound(in.method)))
			return
		}
	}
	s.start(in, deliver)
}

func (s *Stream) initialize(in *inbound) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.version != "" {
		return errorFrame(in.id, newError(CodeInvalidRequest, "Invalid Request: already initialized"))
	}
	if in.params == nil {
		return errorFrame(in.id, newError(CodeInvalidParams, "Invalid params: initialize needs params"))
	}
	version, verr := negotiate(in.params)
	if verr != nil {
		return errorFrame(in.id, verr)
	}
	s.version = version
	// elicitation/create exists from 2025-06-18 (docs/SPEC.md §6's table).
	s.canElicit = version >= "2025-06-18" && declaresFormElicitation(in.params["capabilities"])
	return encodeResponse(in.id, s.e.initializeResult(version), nil)
}

// notification handles a client notification. notifications/initialized
// changes nothing: requests are served from the initialize answer on, so it
// is ignored like every unknown notification.
func (s *Stream) notification(m *message) {
	switch m.method {
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if m.params == nil || json.Unmarshal(m.params, &p) != nil {
			return
		}
		id, ok := parseID(p.RequestID)
		if !ok {
			return
		}
		s.mu.Lock()
		f := s.inflight[id.Key()]
		if f != nil {
			f.cancelled = true
		}
		pc := s.chains[id.Key()]
		delete(s.chains, id.Key())
		s.mu.Unlock()
		if f != nil {
			f.cancel(errCancelledByClient)
		}
		if pc != nil {
			s.e.abandonChain(pc)
		}
	}
}

// start admits a request to be served on its own goroutine, or answers at
// once: a duplicate in-flight id (-32600), the in-flight bound (busy), or a
// stream that is closing (shutting down).
func (s *Stream) start(in *inbound, deliver func([]byte)) {
	key := in.id.Key()
	s.mu.Lock()
	switch {
	case s.inflight[key] != nil:
		s.mu.Unlock()
		deliver(errorFrame(in.id, newError(CodeInvalidRequest, "Invalid Request: id is already in flight")))
		return
	case s.closing:
		s.mu.Unlock()
		deliver(s.e.refusal(in, ErrShuttingDown.Error()))
		return
	case len(s.inflight) >= s.opts.MaxInFlight:
		s.mu.Unlock()
		deliver(s.e.refusal(in, "server is busy"))
		return
	}
	ctx, cancel := context.WithCancelCause(s.base)
	f := &flight{ctx: ctx, cancel: cancel}
	s.inflight[key] = f
	s.wg.Add(1)
	s.mu.Unlock()
	go s.run(f, in, deliver)
}

func (s *Stream) run(f *flight, in *inbound, deliver func([]byte)) {
	defer s.wg.Done()
	notify := func(b []byte) {
		if f.ctx.Err() == nil {
			s.write(b)
		}
	}
	cc := newCallCaller(in.meta, notify, ports.Principal{})
	c := &call{ctx: f.ctx, caller: cc, req: cc, principal: s.principal}
	if in.modern {
		key := in.id.Key()
		c.onParked = func(pc *parkedCall) { s.addChain(key, pc) }
	} else if s.e.AskClient() {
		s.mu.Lock()
		can := s.canElicit
		s.mu.Unlock()
		if can {
			cc.elicit = s.elicit
		}
	}
	result, rerr := s.e.dispatch(c, in)
	cc.finish()
	s.mu.Lock()
	delete(s.inflight, in.id.Key())
	cancelled := f.cancelled
	s.mu.Unlock()
	f.cancel(nil)
	if cancelled {
		deliver(nil) // docs/SPEC.md §3: no response for a cancelled request
		return
	}
	deliver(encodeResponse(in.id, result, rerr))
}

// refusal answers a request that will not be served: tools/call gets the
// tool error msg, anything else -32603 with msg (docs/SPEC.md §4).
func (e *Engine) refusal(in *inbound, msg string) []byte {
	if in.method != "tools/call" {
		return errorFrame(in.id, newError(CodeInternalError, msg))
	}
	r := callToolResult{ToolResult: domain.ToolError(msg)}
	if in.modern {
		r.ResultType, r.Meta = "complete", &resultMeta{e.info}
	}
	return encodeResponse(in.id, r, nil)
}

// Drain handles the end of input (docs/SPEC.md §3 "Ending"): no new requests are
// admitted, prompts waiting for the client settle closed (it can answer
// nothing more), and requests in flight may finish and write until ctx ends.
// It returns ctx's error if some are still running then; the carrier stops
// them with [Stream.Stop].
func (s *Stream) Drain(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.endOnce.Do(func() { close(s.inputEnd) })
	return waitGroup(ctx, &s.wg)
}

// Stop cancels every request in flight as shutting down (a tools/call still
// answers the tool error "server is shutting down" if the stream can write)
// and waits for their goroutines until ctx ends.
func (s *Stream) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.cancel(ErrShuttingDown)
	return waitGroup(ctx, &s.wg)
}

// atBound reports whether MaxInFlight requests are being served.
func (s *Stream) atBound() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inflight) >= s.opts.MaxInFlight
}

func (s *Stream) isInFlight(id ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight[id.Key()] != nil
}

func waitGroup(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var streamIDs atomic.Uint64

// addChain remembers that the request key parked pc: key is now the
// chain's latest id, the only one whose notifications/cancelled ends the
// call (an earlier id of the chain is a finished request, ignored like any
// other). Chains whose calls have ended are dropped, so the map stays
// bounded by the parked rounds.
func (s *Stream) addChain(key string, pc *parkedCall) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, c := range s.chains {
		ended := false
		select {
		case <-c.done:
			ended = true
		default:
		}
		if ended || c == pc {
			delete(s.chains, k)
		}
	}
	s.chains[key] = pc
}

type elicitRequest struct {
	JSONRPC string      `json:"jsonrpc"`
	ID      string      `json:"id"`
	Method  string      `json:"method"`
	Params  elicitParms `json:"params"`
}

type cancelledParams struct {
	RequestID string `json:"requestId"`
	Reason    string `json:"reason"`
}

// elicit sends elicitation/create to a legacy client and waits for its
// response until the round lifetime passes, the call's ctx ends or the stream
// closes; then it sends notifications/cancelled for our request so the client
// can close its dialog (docs/SPEC.md §6 "Legacy stdio"). It returns the result, or
// nil when there is none (an error response included).
func (s *Stream) elicit(ctx context.Context, f domain.Form) json.RawMessage {
	s.mu.Lock()
	s.nextSrv++
	id := fmt.Sprintf("srv-%d", s.nextSrv)
	key := "s:" + id
	ch := make(chan json.RawMessage, 1)
	s.pending[key] = ch
	version := s.version
	s.mu.Unlock()

	params := elicitParms{Mode: "form", Message: f.Message, RequestedSchema: f.RequestedSchema}
	if version == "2025-06-18" {
		params.Mode = "" // that revision has form mode only, unnamed
	}
	req, _ := domain.MarshalJSON(elicitRequest{JSONRPC: "2.0", ID: id, Method: "elicitation/create", Params: params})
	s.write(req)

	timer := time.NewTimer(s.e.roundLifetime)
	defer timer.Stop()
	reason := ""
	select {
	case raw := <-ch:
		return raw
	case <-ctx.Done():
		reason = "the request was cancelled"
	case <-timer.C:
		reason = "no answer in time"
	case <-s.base.Done():
		reason = "the server is stopping"
	case <-s.inputEnd:
		reason = "the input ended"
	}
	s.mu.Lock()
	delete(s.pending, key)
	s.mu.Unlock()
	note, _ := domain.MarshalJSON(notification{JSONRPC: "2.0", Method: "notifications/cancelled",
		Params: cancelledParams{RequestID: id, Reason: reason}})
	s.write(note)
	return nil
}

// response routes a client's response to our pending request; a response
// for an unknown id is ignored.
func (s *Stream) response(m *message) {
	s.mu.Lock()
	ch := s.pending[m.id.Key()]
	delete(s.pending, m.id.Key())
	s.mu.Unlock()
	if ch == nil {
		return
	}
	if m.result != nil {
		ch <- m.result
	} else {
		ch <- nil // an error response: the prompt settles closed
	}
}
