package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"
	"github.com/agentmcp/agentmcp/ports"
)

// The session's optional server features (docs/SPEC.md §2): resources,
// prompts and completion, each served only when the session's
// [ports.Features] has its port. One handler per method; the rows are in
// methods.go.

// Bounds of the feature methods (docs/SPEC.md §2).
const (
	// PageSize is how many entries one page of resources/list,
	// resources/templates/list and prompts/list holds; nextCursor leads
	// to the next.
	PageSize = 100
	// MaxURIBytes bounds a resources/read or completion reference URI; a
	// longer one is -32602, never echoed back.
	MaxURIBytes = 8 << 10
	// MaxCompletionValues is MCP's bound on completion.values.
	MaxCompletionValues = 100
)

// serves reports whether the session serves f.
func (e *Engine) serves(f feature) bool {
	switch f {
	case featureResources:
		return e.features.Resources != nil
	case featurePrompts:
		return e.features.Prompts != nil
	case featureCompletions:
		return e.features.Completer != nil
	case featureSubscriptions:
		return e.features.Resources != nil && e.features.Subscriber != nil
	}
	return true
}

// appendFeatureCaps appends the capabilities of the session's features
// after "tools":{}: resources.subscribe when the session serves
// subscriptions and the origin delivers them (streaming: a legacy stream,
// or any modern request, which subscriptions/listen serves on every
// carrier). listChanged is never declared: no list-changed notification
// is ever sent (docs/SPEC.md §2).
func (e *Engine) appendFeatureCaps(b []byte, streaming bool) []byte {
	if e.features.Prompts != nil {
		b = append(b, `,"prompts":{}`...)
	}
	switch {
	case e.features.Resources == nil:
	case streaming && e.serves(featureSubscriptions):
		b = append(b, `,"resources":{"subscribe":true}`...)
	default:
		b = append(b, `,"resources":{}`...)
	}
	if e.features.Completer != nil {
		b = append(b, `,"completions":{}`...)
	}
	return b
}

// featureResult encodes one feature method's result v (a struct whose
// JSON is the result's members), with the caching hints of a modern
// result when ttlMs >= 0 (SEP-2549).
func (e *Engine) featureResult(in *inbound, v any, ttlMs int64) reply {
	body, err := domain.MarshalJSON(v)
	if err != nil || len(body) < 2 {
		return answerErr(in.id, jsonrpc.NewError(CodeInternalError, "Internal error: the result could not be encoded"))
	}
	b := e.resultHead(make([]byte, 0, len(body)+256), in, "complete")
	b = append(b, body[1:len(body)-1]...) // the members, without braces
	if in.modern && ttlMs >= 0 {
		b = strconv.AppendInt(append(b, `,"ttlMs":`...), ttlMs, 10)
		b = append(b, `,"cacheScope":"private"`...)
	}
	return answered(e.resultTail(b, in))
}

// featureError maps a session's error to the wire: not found (with
// data.uri when uri is set) and refusals are -32602, anything else -32603.
func featureError(in *inbound, err error, uri string) reply {
	msg := domain.ClientMessage(err)
	switch {
	case errors.Is(err, ports.ErrResourceNotFound):
		if err == ports.ErrResourceNotFound {
			msg = "Resource not found: " + uri
		}
		return answerErr(in.id, withURI(jsonrpc.NewError(CodeInvalidParams, msg), uri))
	case errors.Is(err, ports.ErrRefused):
		return answerErr(in.id, withURI(jsonrpc.NewError(CodeInvalidParams, msg), uri))
	case errors.Is(err, ports.ErrInvalidPrompt):
		return answerErr(in.id, jsonrpc.NewError(CodeInvalidParams, msg))
	}
	return answerErr(in.id, jsonrpc.NewError(CodeInternalError, msg))
}

func withURI(e *Error, uri string) *Error {
	if uri != "" {
		e.Data = jsonrpc.AppendString([]byte(`{"uri":`), uri)
		e.Data = append(e.Data, '}')
	}
	return e
}

// recoverFeature answers a request whose session panicked with
// errSessionPanic, as recoverSession does for a call.
func (e *Engine) recoverFeature(in *inbound, r *reply) {
	if v := recover(); v != nil {
		e.logPanic(v, "engine: the session panicked; the request answers -32603")
		*r = answerErr(in.id, errSessionPanic)
	}
}

// pageOf reads params.cursor and returns the page of n entries it names:
// [from, to) and the next cursor ("" on the last page). A cursor is
// opaque to clients: one this engine did not mint is -32602.
func pageOf(in *inbound, n int) (from, to int, next string, err *Error) {
	if raw, ok := in.param("cursor"); ok {
		if !jsonrpc.IsString(raw) {
			return 0, 0, "", jsonrpc.InvalidParams("cursor must be a string")
		}
		off, ok := decodeCursor(jsonrpc.Unquote(raw))
		if !ok || off > n {
			return 0, 0, "", jsonrpc.InvalidParams("invalid cursor")
		}
		from = off
	}
	to = min(from+PageSize, n)
	if to < n {
		next = base64.RawURLEncoding.EncodeToString(strconv.AppendInt([]byte("o"), int64(to), 10))
	}
	return from, to, next, nil
}

func decodeCursor(c string) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 2 || b[0] != 'o' {
		return 0, false
	}
	n, err := strconv.Atoi(string(b[1:]))
	return n, err == nil && n > 0
}

// paged takes a session's list (and its error) and returns the page in's
// cursor names with the next cursor, or the answer to give instead.
func paged[T any](in *inbound) func([]T, error) ([]T, string, *reply) {
	return func(list []T, err error) ([]T, string, *reply) {
		if err != nil {
			r := featureError(in, err, "")
			return nil, "", &r
		}
		from, to, next, perr := pageOf(in, len(list))
		if perr != nil {
			r := answerErr(in.id, perr)
			return nil, "", &r
		}
		return list[from:to], next, nil
	}
}

type resourceJSON struct {
	URI         string          `json:"uri"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MIMEType    string          `json:"mimeType,omitempty"`
	Size        *int64          `json:"size,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

func (e *Engine) listResources(ctx context.Context, p *peer, in *inbound) (r reply) {
	defer e.recoverFeature(in, &r)
	page, next, fail := paged[ports.Resource](in)(e.features.Resources.ListResources(ctx, p.principal))
	if fail != nil {
		return *fail
	}
	out := struct {
		Resources  []resourceJSON `json:"resources"`
		NextCursor string         `json:"nextCursor,omitempty"`
	}{Resources: make([]resourceJSON, 0, len(page)), NextCursor: next}
	for _, res := range page {
		j := resourceJSON{URI: res.URI, Name: res.Name, Title: res.Title, Description: res.Description, MIMEType: res.MIMEType, Meta: res.Meta}
		if res.Size >= 0 {
			j.Size = &res.Size
		}
		out.Resources = append(out.Resources, j)
	}
	// The list changes as the agent works (a new conversation, a turn):
	// never cached (ttlMs 0).
	return e.featureResult(in, out, 0)
}

type templateJSON struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
}

func (e *Engine) listResourceTemplates(ctx context.Context, p *peer, in *inbound) (r reply) {
	defer e.recoverFeature(in, &r)
	page, next, fail := paged[ports.ResourceTemplate](in)(e.features.Resources.ResourceTemplates(ctx, p.principal))
	if fail != nil {
		return *fail
	}
	out := struct {
		ResourceTemplates []templateJSON `json:"resourceTemplates"`
		NextCursor        string         `json:"nextCursor,omitempty"`
	}{ResourceTemplates: make([]templateJSON, 0, len(page)), NextCursor: next}
	for _, t := range page {
		out.ResourceTemplates = append(out.ResourceTemplates, templateJSON(t))
	}
	return e.featureResult(in, out, e.ttlMs)
}

// contentsJSON is a TextResourceContents or BlobResourceContents.
type contentsJSON struct {
	URI      string          `json:"uri"`
	MIMEType string          `json:"mimeType,omitempty"`
	Text     *string         `json:"text,omitempty"`
	Blob     []byte          `json:"blob,omitempty"` // base64 by encoding/json
	Meta     json.RawMessage `json:"_meta,omitempty"`
}

func toContentsJSON(c ports.ResourceContents) contentsJSON {
	j := contentsJSON{URI: c.URI, MIMEType: c.MIMEType, Meta: c.Meta}
	if c.Blob != nil {
		j.Blob = c.Blob
	} else {
		j.Text = &c.Text
	}
	return j
}

// stringParam reads params[name] as a string of at most max bytes.
func stringParam(in *inbound, name string, max int) (string, *Error) {
	raw, ok := in.param(name)
	if !ok || !jsonrpc.IsString(raw) {
		return "", jsonrpc.InvalidParams(in.method + " needs a string " + name)
	}
	if len(raw) > max+2 { // checked before unquoting: a huge value costs nothing more
		return "", jsonrpc.InvalidParams(name + " is longer than " + strconv.Itoa(max) + " bytes")
	}
	s := jsonrpc.Unquote(raw)
	if len(s) > max {
		return "", jsonrpc.InvalidParams(name + " is longer than " + strconv.Itoa(max) + " bytes")
	}
	return s, nil
}

func (e *Engine) readResource(ctx context.Context, p *peer, in *inbound) (r reply) {
	uri, perr := stringParam(in, "uri", MaxURIBytes)
	if perr != nil {
		return answerErr(in.id, perr)
	}
	defer e.recoverFeature(in, &r)
	contents, err := e.features.Resources.ReadResource(ctx, uri, p.principal)
	switch {
	case err != nil:
		return featureError(in, err, uri)
	case len(contents) == 0: // SEP-2164: never an empty contents array
		return featureError(in, ports.ErrResourceNotFound, uri)
	}
	out := struct {
		Contents []contentsJSON `json:"contents"`
	}{Contents: make([]contentsJSON, len(contents))}
	for i, c := range contents {
		out.Contents[i] = toContentsJSON(c)
	}
	// A file or conversation changes as the agent works: a client must
	// never show it stale (ttlMs 0, SEP-2549).
	return e.featureResult(in, out, 0)
}

type promptArgJSON struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

type promptJSON struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	Arguments   []promptArgJSON `json:"arguments,omitempty"`
}

func (e *Engine) listPrompts(ctx context.Context, p *peer, in *inbound) (r reply) {
	defer e.recoverFeature(in, &r)
	page, next, fail := paged[ports.Prompt](in)(e.features.Prompts.ListPrompts(ctx, p.principal))
	if fail != nil {
		return *fail
	}
	out := struct {
		Prompts    []promptJSON `json:"prompts"`
		NextCursor string       `json:"nextCursor,omitempty"`
	}{Prompts: make([]promptJSON, 0, len(page)), NextCursor: next}
	for _, pr := range page {
		j := promptJSON{Name: pr.Name, Title: pr.Title, Description: pr.Description}
		for _, a := range pr.Arguments {
			j.Arguments = append(j.Arguments, promptArgJSON(a))
		}
		out.Prompts = append(out.Prompts, j)
	}
	return e.featureResult(in, out, e.ttlMs)
}

type contentJSON struct {
	Type     string        `json:"type"`
	Text     *string       `json:"text,omitempty"`
	Data     []byte        `json:"data,omitempty"`
	MIMEType string        `json:"mimeType,omitempty"`
	Resource *contentsJSON `json:"resource,omitempty"`
}

type messageJSON struct {
	Role    string      `json:"role"`
	Content contentJSON `json:"content"`
}

// stringMap reads params[name] (or, with sub, params[name][sub]) as an
// object of strings; nil when absent.
func stringMap(raw []byte, what string) (map[string]string, *Error) {
	if !jsonrpc.IsObject(raw) {
		return nil, jsonrpc.InvalidParams(what + " must be an object of strings")
	}
	ms, dup := jsonrpc.Members(raw, nil)
	if dup {
		return nil, jsonrpc.InvalidParams(what + " names a key twice")
	}
	m := make(map[string]string, len(ms))
	for _, mb := range ms {
		if !jsonrpc.IsString(mb.Value) {
			return nil, jsonrpc.InvalidParams(what + " must be an object of strings")
		}
		m[mb.Name] = jsonrpc.Unquote(mb.Value)
	}
	return m, nil
}

func (e *Engine) getPrompt(ctx context.Context, p *peer, in *inbound) (r reply) {
	name, perr := stringParam(in, "name", MaxURIBytes)
	if perr != nil {
		return answerErr(in.id, perr)
	}
	var args map[string]string
	if raw, ok := in.param("arguments"); ok {
		if args, perr = stringMap(raw, "arguments"); perr != nil {
			return answerErr(in.id, perr)
		}
	}
	defer e.recoverFeature(in, &r)
	res, err := e.features.Prompts.GetPrompt(ctx, name, args, p.principal)
	if err != nil {
		return featureError(in, err, "")
	}
	out := struct {
		Description string        `json:"description,omitempty"`
		Messages    []messageJSON `json:"messages"`
	}{Description: res.Description, Messages: make([]messageJSON, len(res.Messages))}
	for i, m := range res.Messages {
		c := contentJSON{Type: m.Content.Type, MIMEType: m.Content.MIMEType}
		switch {
		case m.Content.Resource != nil:
			rc := toContentsJSON(*m.Content.Resource)
			c.Resource = &rc
		case m.Content.Data != nil:
			c.Data = m.Content.Data
		default:
			c.Text = &m.Content.Text
		}
		out.Messages[i] = messageJSON{Role: m.Role, Content: c}
	}
	return e.featureResult(in, out, -1)
}

func (e *Engine) complete(ctx context.Context, p *peer, in *inbound) (r reply) {
	req, perr := completionRequest(in)
	if perr != nil {
		return answerErr(in.id, perr)
	}
	defer e.recoverFeature(in, &r)
	c, err := e.features.Completer.Complete(ctx, req, p.principal)
	if err != nil {
		return featureError(in, err, req.URI)
	}
	type completion struct {
		Values  []string `json:"values"`
		Total   int      `json:"total,omitempty"`
		HasMore bool     `json:"hasMore"`
	}
	out := struct {
		Completion completion `json:"completion"`
	}{completion{Values: c.Values, Total: c.Total}}
	if out.Completion.Values == nil {
		out.Completion.Values = []string{}
	}
	if len(c.Values) > MaxCompletionValues {
		out.Completion.Values, out.Completion.HasMore = c.Values[:MaxCompletionValues], true
	}
	out.Completion.HasMore = out.Completion.HasMore || c.Total > len(out.Completion.Values)
	return e.featureResult(in, out, -1)
}

// completionRequest reads completion/complete's params: ref
// {type:"ref/prompt",name} or {type:"ref/resource",uri}, argument
// {name,value}, and context.arguments when present.
func completionRequest(in *inbound) (ports.CompletionRequest, *Error) {
	var req ports.CompletionRequest
	var ref struct {
		Type string `json:"type"`
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	var arg struct {
		Name  *string `json:"name"`
		Value *string `json:"value"`
	}
	raw, ok := in.param("ref")
	if !ok || !jsonrpc.IsObject(raw) || json.Unmarshal(raw, &ref) != nil {
		return req, jsonrpc.InvalidParams("completion/complete needs a ref object")
	}
	switch {
	case ref.Type == "ref/prompt" && ref.Name != "":
	case ref.Type == "ref/resource" && ref.URI != "":
	default:
		return req, jsonrpc.InvalidParams(`ref must be {"type":"ref/prompt","name"} or {"type":"ref/resource","uri"}`)
	}
	if len(ref.URI) > MaxURIBytes || len(ref.Name) > MaxURIBytes {
		return req, jsonrpc.InvalidParams("ref is longer than " + strconv.Itoa(MaxURIBytes) + " bytes")
	}
	raw, ok = in.param("argument")
	if !ok || !jsonrpc.IsObject(raw) || json.Unmarshal(raw, &arg) != nil || arg.Name == nil || arg.Value == nil {
		return req, jsonrpc.InvalidParams("completion/complete needs an argument {name, value} of strings")
	}
	req.RefType, req.Name, req.URI, req.Argument, req.Value = ref.Type, ref.Name, ref.URI, *arg.Name, *arg.Value
	if raw, ok := in.param("context"); ok {
		if !jsonrpc.IsObject(raw) {
			return req, jsonrpc.InvalidParams("context must be an object")
		}
		if args, ok := jsonrpc.Lookup(mustMembers(raw), "arguments"); ok {
			m, perr := stringMap(args, "context.arguments")
			if perr != nil {
				return req, perr
			}
			req.Context = m
		}
	}
	return req, nil
}

func mustMembers(obj []byte) []jsonrpc.Member {
	ms, _ := jsonrpc.Members(obj, nil)
	return ms
}
