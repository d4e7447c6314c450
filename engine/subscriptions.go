package engine

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/agentmcp/agentmcp/internal/jsonrpc"
	"github.com/agentmcp/agentmcp/ports"
)

// Resource subscriptions (docs/SPEC.md §2 "Subscriptions"), served when the
// session's [ports.Features] has a Subscriber beside its Resources:
//
//   - legacy revisions: resources/subscribe and resources/unsubscribe
//     answer {} on every carrier. A stream (stdio, a Unix-socket
//     connection) holds its subscriptions until unsubscribed or until it
//     ends, and sends notifications/resources/updated for them; its
//     initialize declares resources.subscribe. Over legacy HTTP there is
//     no stream to send on: a subscription is checked by the session like
//     a stream's, then released — accepted, never delivered — and the
//     capability is not declared.
//   - 2026-07-28: subscriptions/listen with notifications.resourceSubscriptions
//     on every carrier: the acknowledgement first, then each update tagged
//     with the request's id as its subscriptionId, until the request ends.
//     resources/subscribe and unsubscribe do not exist there (-32601).
//
// One [subscriptions] set per holder (a stream's legacy subscriptions, or
// one listen request's), each with its own writer (the stream's goroutine,
// or the listen request's own), so the session's updated callback never
// waits for a client: it marks the subscription pending and wakes the
// writer, which sends each pending URI once however many changes came
// meanwhile.

// MaxSubscriptions bounds the resource subscriptions one connection holds
// at once: a stream's (its legacy subscriptions and those of its
// subscriptions/listen requests together), or one subscriptions/listen
// request's over HTTP. One more is refused with -32602 and nothing is held
// (docs/SPEC.md §2).
const MaxSubscriptions = 256

// Methods and _meta key of the subscriptions (MCP 2025-11-25 resources,
// 2026-07-28 "Subscriptions").
const (
	methodResourceUpdated = "notifications/resources/updated"
	methodAcknowledged    = "notifications/subscriptions/acknowledged"
	metaSubscriptionID    = "io.modelcontextprotocol/subscriptionId"
)

var (
	errTooManySubscriptions = errors.New("this connection holds " + strconv.Itoa(MaxSubscriptions) +
		" resource subscriptions, the most one connection may hold; unsubscribe from one first")
	errSubscriptionsClosed = errors.New("the connection is closing")
)

// subBudget counts the subscriptions of one connection under
// MaxSubscriptions.
type subBudget struct{ n atomic.Int32 }

func (b *subBudget) take() bool {
	if b.n.Add(1) > MaxSubscriptions {
		b.n.Add(-1)
		return false
	}
	return true
}

func (b *subBudget) give() { b.n.Add(-1) }

// streamSubs is what a stream keeps for subscriptions: its legacy set, the
// budget its sets share, when its input ended (a listen request then ends),
// and its legacy set's writer, started with the first subscription.
type streamSubs struct {
	legacy *subscriptions
	budget subBudget
	// inputEnded is closed once the stream's input ended (its client
	// went away); stop once its serving has ended.
	inputEnded, stop <-chan struct{}
	writer           sync.Once
}

func (ss *streamSubs) init(inputEnded, stop <-chan struct{}) {
	ss.legacy = newSubscriptions(&ss.budget)
	ss.inputEnded, ss.stop = inputEnded, stop
}

// subscriptions is one holder's resource subscriptions, by URI.
type subscriptions struct {
	budget *subBudget
	wake   chan struct{} // one token: something is pending

	mu      sync.Mutex
	held    map[string]*subscription
	pending []*subscription // changed since the writer last looked, each once
	closed  bool
}

// subscription is one URI's, held from the session's SubscribeResource
// until remove or close.
type subscription struct {
	set    *subscriptions
	uri    string
	cancel func()
	// Under set.mu: stored (in held), pending (in pending, or marked
	// before it was stored), gone (removed: updates are dropped).
	stored, pending, gone bool
}

func newSubscriptions(b *subBudget) *subscriptions {
	return &subscriptions{budget: b, wake: make(chan struct{}, 1)}
}

// updated is the callback the session gets: mark pending, wake the writer.
func (sub *subscription) updated() {
	s := sub.set
	s.mu.Lock()
	defer s.mu.Unlock()
	if sub.gone || sub.pending {
		return
	}
	sub.pending = true
	if sub.stored {
		s.queue(sub)
	}
}

// queue adds sub to pending and wakes the writer; under s.mu.
func (s *subscriptions) queue(sub *subscription) {
	s.pending = append(s.pending, sub)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// add subscribes to uri through the session unless s holds it already:
// nil when s holds it (now or before); errTooManySubscriptions past the
// budget, errSubscriptionsClosed once s is closed, or the session's error.
// Nothing is held when it fails.
func (s *subscriptions) add(ctx context.Context, rs ports.ResourceSubscriber, uri string, p ports.Principal) error {
	s.mu.Lock()
	closed, held := s.closed, s.held[uri] != nil
	s.mu.Unlock()
	switch {
	case closed:
		return errSubscriptionsClosed
	case held:
		return nil
	case !s.budget.take():
		return errTooManySubscriptions
	}
	stored := false
	defer func() {
		if !stored { // a failure, a duplicate, or the session's panic
			s.budget.give()
		}
	}()
	sub := &subscription{set: s, uri: uri}
	cancel, err := rs.SubscribeResource(ctx, uri, p, sub.updated)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed || s.held[uri] != nil { // closed meanwhile, or a concurrent add won
		closed = s.closed
		sub.gone = true
		s.mu.Unlock()
		cancel()
		if closed {
			return errSubscriptionsClosed
		}
		return nil
	}
	if s.held == nil {
		s.held = make(map[string]*subscription)
	}
	sub.cancel, sub.stored, stored = cancel, true, true
	s.held[uri] = sub
	if sub.pending { // changed while being subscribed
		s.queue(sub)
	}
	s.mu.Unlock()
	return nil
}

// remove ends the subscription to uri, if s holds one.
func (s *subscriptions) remove(uri string) {
	s.mu.Lock()
	sub := s.held[uri]
	if sub != nil {
		delete(s.held, uri)
		sub.gone = true
	}
	s.mu.Unlock()
	if sub != nil {
		sub.cancel()
		s.budget.give()
	}
}

// close ends every subscription of s; add fails from now on. Safe to
// repeat.
func (s *subscriptions) close() {
	s.mu.Lock()
	s.closed = true
	held := s.held
	s.held, s.pending = nil, nil
	for _, sub := range held {
		sub.gone = true
	}
	s.mu.Unlock()
	for _, sub := range held {
		sub.cancel()
		s.budget.give()
	}
}

// take returns the URIs pending since the last take, each once.
func (s *subscriptions) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var uris []string
	for _, sub := range s.pending {
		sub.pending = false
		if !sub.gone {
			uris = append(uris, sub.uri)
		}
	}
	s.pending = s.pending[:0]
	return uris
}

// serve writes each pending URI with write until end or ended is closed
// (a nil channel never is); it checks them before every write, so nothing
// is written once either is closed.
func (s *subscriptions) serve(end, ended <-chan struct{}, write func(uri string)) {
	over := func() bool {
		select {
		case <-end:
			return true
		case <-ended:
			return true
		default:
			return false
		}
	}
	for {
		select {
		case <-s.wake:
		case <-end:
			return
		case <-ended:
			return
		}
		for _, uri := range s.take() {
			if over() {
				return
			}
			write(uri)
		}
	}
}

// appendUpdated appends a notifications/resources/updated for uri; id,
// when set, is the subscriptions/listen request's, its subscriptionId.
func appendUpdated(b []byte, id []byte, uri string) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":"`+methodResourceUpdated+`","params":{`...)
	if id != nil {
		b = append(append(append(b, `"_meta":{"`+metaSubscriptionID+`":`...), id...), "},"...)
	}
	b = jsonrpc.AppendString(append(b, `"uri":`...), uri)
	return append(b, "}}"...)
}

// emptyResult answers a legacy request with {}.
func emptyResult(in *inbound) reply {
	return answered(jsonrpc.EncodeResponse(in.id, []byte("{}"), nil))
}

// subscriptionError maps add's errors to the wire: the bound is -32602,
// a closing stream -32603, a session's error as resources/read's.
func subscriptionError(in *inbound, err error, uri string) reply {
	switch {
	case errors.Is(err, errTooManySubscriptions):
		return answerErr(in.id, jsonrpc.InvalidParams(err.Error()))
	case errors.Is(err, errSubscriptionsClosed):
		return answerErr(in.id, jsonrpc.NewError(CodeInternalError, ErrShuttingDown.Error()))
	}
	return featureError(in, err, uri)
}

// subscribe serves a legacy resources/subscribe {uri}.
func (e *Engine) subscribe(ctx context.Context, p *peer, in *inbound) (r reply) {
	uri, perr := stringParam(in, "uri", MaxURIBytes)
	if perr != nil {
		return answerErr(in.id, perr)
	}
	defer e.recoverFeature(in, &r)
	ss := p.origin.subs()
	if ss == nil {
		// Legacy HTTP: no stream to send an update on. The subscription
		// is checked as a stream's is, then released: accepted, never
		// delivered (docs/SPEC.md §2), and resources.subscribe is not
		// declared there.
		cancel, err := e.features.Subscriber.SubscribeResource(ctx, uri, p.principal, func() {})
		if err != nil {
			return featureError(in, err, uri)
		}
		cancel()
		return emptyResult(in)
	}
	notify := p.notify
	ss.writer.Do(func() {
		// The stream's writer: it ends when the stream's serving ends
		// (Closed has ended every subscription by then).
		done := ss.stop
		e.goCall(func() {
			var buf []byte
			ss.legacy.serve(done, nil, func(uri string) {
				buf = appendUpdated(buf[:0], nil, uri)
				notify(buf)
			})
		})
	})
	if err := ss.legacy.add(ctx, e.features.Subscriber, uri, p.principal); err != nil {
		return subscriptionError(in, err, uri)
	}
	return emptyResult(in)
}

// unsubscribe serves a legacy resources/unsubscribe {uri}: {} whether or
// not the connection held it (over HTTP it holds none).
func (e *Engine) unsubscribe(_ context.Context, p *peer, in *inbound) reply {
	uri, perr := stringParam(in, "uri", MaxURIBytes)
	if perr != nil {
		return answerErr(in.id, perr)
	}
	if ss := p.origin.subs(); ss != nil {
		ss.legacy.remove(uri)
	}
	return emptyResult(in)
}

// listenFilter is what subscriptions/listen's notifications asks of this
// server: the resources to watch (without repeats, in order), and whether
// resourceSubscriptions was there at all. The list-changed members are
// never honoured (no listChanged is declared), so they are not read.
type listenFilter struct {
	uris      []string
	resources bool
}

func readListenFilter(in *inbound) (listenFilter, *Error) {
	var f listenFilter
	raw, ok := in.param("notifications")
	if !ok || !jsonrpc.IsObject(raw) {
		return f, jsonrpc.InvalidParams("subscriptions/listen needs a notifications object")
	}
	ms, dup := jsonrpc.Members(raw, nil)
	if dup {
		return f, jsonrpc.InvalidParams("notifications names a key twice")
	}
	list, ok := jsonrpc.Lookup(ms, "resourceSubscriptions")
	if !ok {
		return f, nil
	}
	f.resources = true
	if jsonrpc.FirstByte(list) != '[' {
		return f, jsonrpc.InvalidParams("notifications.resourceSubscriptions must be an array of URIs")
	}
	elems := jsonrpc.Elements(list)
	if len(elems) > MaxSubscriptions {
		return f, jsonrpc.InvalidParams("notifications.resourceSubscriptions lists more than " + strconv.Itoa(MaxSubscriptions) + " URIs")
	}
	seen := make(map[string]bool, len(elems))
	for _, el := range elems {
		if !jsonrpc.IsString(el) {
			return f, jsonrpc.InvalidParams("notifications.resourceSubscriptions must be an array of URIs")
		}
		if len(el) > MaxURIBytes+2 {
			return f, jsonrpc.InvalidParams("a resourceSubscriptions URI is longer than " + strconv.Itoa(MaxURIBytes) + " bytes")
		}
		uri := jsonrpc.Unquote(el)
		if len(uri) > MaxURIBytes {
			return f, jsonrpc.InvalidParams("a resourceSubscriptions URI is longer than " + strconv.Itoa(MaxURIBytes) + " bytes")
		}
		if !seen[uri] {
			seen[uri] = true
			f.uris = append(f.uris, uri)
		}
	}
	return f, nil
}

// listen serves subscriptions/listen (2026-07-28): it subscribes to each
// URI of resourceSubscriptions the session accepts, sends the
// acknowledgement with those (the honoured subset; a URI the session
// refuses, or one past the connection's bound, is left out, and no
// list-changed kind is ever honoured), then each update tagged with the
// request's id, until the request ends: the client cancels it
// (notifications/cancelled on a stream, closing the request over HTTP) or
// goes away (a stream's input ends), and nothing more is written; or the
// server ends it (shutting down) with the graceful result that carries the
// subscriptionId.
func (e *Engine) listen(ctx context.Context, p *peer, in *inbound) (r reply) {
	f, perr := readListenFilter(in)
	if perr != nil {
		return answerErr(in.id, perr)
	}
	if p.notify == nil {
		return answerErr(in.id, jsonrpc.NewError(CodeInternalError, "Internal error: this carrier cannot stream notifications"))
	}
	budget, ended := new(subBudget), (<-chan struct{})(nil)
	if ss := p.origin.subs(); ss != nil {
		budget, ended = &ss.budget, ss.inputEnded
	}
	set := newSubscriptions(budget)
	defer set.close()
	defer e.recoverFeature(in, &r)
	id := in.id.Raw()
	var honoured []string
	for _, uri := range f.uris {
		err := set.add(ctx, e.features.Subscriber, uri, p.principal)
		switch {
		case err == nil:
			honoured = append(honoured, uri)
		case ctx.Err() != nil:
			return reply{kind: Cancelled}
		case errors.Is(err, ports.ErrResourceNotFound) || errors.Is(err, ports.ErrRefused) || errors.Is(err, errTooManySubscriptions):
		default:
			e.logger.Warn("engine: the session failed a resource subscription; subscriptions/listen leaves it out", "err", err)
		}
	}
	p.notify(appendAcknowledged(nil, id, f, honoured))
	var buf []byte
	set.serve(ctx.Done(), ended, func(uri string) {
		buf = appendUpdated(buf[:0], id, uri)
		p.notify(buf)
	})
	if !e.shuttingDown(ctx) {
		// The client ended it: cancelled it (the framings write nothing
		// for a cancelled request), or went away (a stream's input ended,
		// a transport drop, which carries no response).
		return reply{kind: Cancelled}
	}
	// The server ends it: the graceful result, with the subscriptionId.
	b := e.resultHead(make([]byte, 0, 160), in, "complete")
	b = append(append(append(b, `"_meta":{"`+metaSubscriptionID+`":`...), id...), `,"`+metaServerInfo+`":`...)
	b = append(append(b, e.infoJSON...), "}}}"...)
	return answered(b)
}

// appendAcknowledged appends the notifications/subscriptions/acknowledged
// of listen request id: the honoured subset of its filter.
func appendAcknowledged(b, id []byte, f listenFilter, honoured []string) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":"`+methodAcknowledged+`","params":{"_meta":{"`+metaSubscriptionID+`":`...)
	b = append(append(b, id...), `},"notifications":{`...)
	if f.resources {
		b = append(b, `"resourceSubscriptions":[`...)
		for i, uri := range honoured {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonrpc.AppendString(b, uri)
		}
		b = append(b, ']')
	}
	return append(b, "}}}"...)
}
