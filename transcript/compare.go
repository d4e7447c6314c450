package transcript

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
)

// classify returns a message's matching key: "id:<id text>" for a response,
// "req:<id text>" for a server-to-client request (with its method), "" for a
// message without an id (an error without id, a notification, a batch).
func classify(m []byte) (key, method string) {
	m = bytes.TrimSpace(m)
	if len(m) == 0 || m[0] != '{' {
		return "", ""
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(m, &obj) != nil {
		return "", ""
	}
	raw, ok := obj["id"]
	if !ok {
		return "", ""
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return "", ""
	}
	if mraw, ok := obj["method"]; ok {
		_ = json.Unmarshal(mraw, &method)
		return "req:" + b.String(), method
	}
	return "id:" + b.String(), ""
}

// decode decodes a message with numbers kept as written and the ignore
// paths removed.
func decode(m []byte, ignore []string) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(m))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	for _, p := range ignore {
		v = remove(v, strings.Split(p, "."))
	}
	return v, nil
}

func remove(v any, path []string) any {
	if len(path) == 0 {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		if path[0] == "*" {
			for k, e := range x {
				if len(path) == 1 {
					delete(x, k)
				} else {
					x[k] = remove(e, path[1:])
				}
			}
			return x
		}
		e, ok := x[path[0]]
		if !ok {
			return x
		}
		if len(path) == 1 {
			delete(x, path[0])
		} else {
			x[path[0]] = remove(e, path[1:])
		}
	case []any:
		if path[0] == "*" {
			for i, e := range x {
				x[i] = remove(e, path[1:])
			}
		}
	case string:
		// A string holding a JSON object or array (a tool result's text:
		// an execution envelope) is descended into: the path goes on in
		// its decoded value, which then stands for the string.
		if t := strings.TrimSpace(x); t == "" || (t[0] != '{' && t[0] != '[') {
			return v
		}
		dec := json.NewDecoder(strings.NewReader(x))
		dec.UseNumber()
		var inner any
		if dec.Decode(&inner) != nil || dec.More() {
			return v
		}
		return remove(inner, path)
	}
	return v
}

// Compare checks a run's result against f's server section and returns the
// problems found, none when it matches (see the package doc, "Matching").
func Compare(f *File, res Result) []string {
	var problems []string
	for _, m := range res.Messages {
		if err := CheckServerFrame(m); err != nil {
			problems = append(problems, fmt.Sprintf("the server wrote something that is not one compact JSON-RPC message (%v): %q", err, truncate(m, 200)))
		}
	}
	if len(problems) > 0 {
		return problems
	}

	tokens := map[string]int{} // tokens matched by the placeholder → times
	type group struct{ want, got [][]byte }
	groups := map[string]*group{}
	var order []string
	get := func(k string) *group {
		g := groups[k]
		if g == nil {
			g = &group{}
			groups[k] = g
			order = append(order, k)
		}
		return g
	}
	for _, m := range f.Server {
		k, _ := classify(m)
		get(k).want = append(get(k).want, m)
	}
	for _, m := range res.Messages {
		k, _ := classify(m)
		get(k).got = append(get(k).got, m)
	}
	for _, k := range order {
		g := groups[k]
		what := "without an id"
		switch {
		case strings.HasPrefix(k, "id:"):
			what = "with id " + strings.TrimPrefix(k, "id:")
		case strings.HasPrefix(k, "req:"):
			what = "request with id " + strings.TrimPrefix(k, "req:")
		}
		for i := range max(len(g.want), len(g.got)) {
			switch {
			case i >= len(g.got):
				problems = append(problems, fmt.Sprintf("missing message %s (#%d of them): want %s", what, i+1, truncate(g.want[i], 400)))
			case i >= len(g.want):
				problems = append(problems, fmt.Sprintf("unexpected message %s (#%d of them): got %s", what, i+1, truncate(g.got[i], 400)))
			default:
				want, werr := decode(g.want[i], f.Ignore)
				got, gerr := decode(g.got[i], f.Ignore)
				if werr != nil || gerr != nil {
					problems = append(problems, fmt.Sprintf("message %s: cannot decode: %v %v", what, werr, gerr))
					continue
				}
				want = fillTokens(want, got, tokens)
				if d := cmp.Diff(want, got); d != "" {
					problems = append(problems, fmt.Sprintf("message %s (#%d of them) differs (-want +got):\n%s", what, i+1, d))
				}
			}
		}
	}
	for tok, n := range tokens {
		if n > 1 {
			problems = append(problems, fmt.Sprintf("the requestState %s was minted %d times: every round needs a fresh token", tok, n))
		}
	}
	for _, id := range f.Absent {
		for _, m := range res.Messages {
			if k, _ := classify(m); k == "id:"+id {
				problems = append(problems, fmt.Sprintf("a message for id %s, which must never be answered: %s", id, truncate(m, 400)))
			}
		}
	}
	if f.HasCalls && !slices.Equal(f.Calls, res.Calls) {
		problems = append(problems, fmt.Sprintf("the session's calls: got %v, want %v", res.Calls, f.Calls))
	}
	return problems
}

// TokenPlaceholder, as a string value in an expected message, matches any
// requestState the server may mint: 43 characters of unpadded base64url
// encoding 32 bytes (docs/SPEC.md §6). Every token it matches in one run must be
// distinct, since each round gets a fresh one.
const TokenPlaceholder = "{{requestState}}"

// ValidToken reports whether s is a requestState as docs/SPEC.md §6 mints them: 32
// bytes, base64url without padding, in canonical form (43 characters).
func ValidToken(s string) bool {
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil && len(b) == 32 && len(s) == 43
}

// fillTokens returns want with every TokenPlaceholder whose counterpart in
// got is a valid token replaced by that token (counted in tokens), so that
// the comparison accepts it; a placeholder facing anything else stays and
// shows up in the diff.
func fillTokens(want, got any, tokens map[string]int) any {
	switch w := want.(type) {
	case string:
		g, ok := got.(string)
		switch {
		case !ok:
		case w == TokenPlaceholder && ValidToken(g):
			tokens[g]++
			return g
		case w == TaskIDPlaceholder && ValidToken(g):
			return g
		case w == TimePlaceholder:
			if _, err := time.Parse(time.RFC3339Nano, g); err == nil {
				return g
			}
		}
	case map[string]any:
		if g, ok := got.(map[string]any); ok {
			for k, wv := range w {
				if gv, ok := g[k]; ok {
					w[k] = fillTokens(wv, gv, tokens)
				}
			}
		}
	case []any:
		if g, ok := got.([]any); ok {
			for i := range min(len(w), len(g)) {
				w[i] = fillTokens(w[i], g[i], tokens)
			}
		}
	}
	return want
}

// TaskIDPlaceholder, as a string value in an expected message, matches any
// task id the server may mint (docs/SPEC.md §14: the same shape as a
// requestState). Unlike requestStates, one id recurs in every answer about
// its task.
const TaskIDPlaceholder = "{{taskId}}"

// TimePlaceholder, as a string value in an expected message, matches any
// RFC 3339 timestamp (a task's createdAt and lastUpdatedAt).
const TimePlaceholder = "{{time}}"

// taskMemberRE finds a task id or timestamp in a server message's text.
var taskMemberRE = regexp.MustCompile(`"(taskId|createdAt|lastUpdatedAt)":"[^"]*"`)

// tokenMemberRE finds a minted requestState in a server message's text.
var tokenMemberRE = regexp.MustCompile(`"requestState":"[A-Za-z0-9_-]{43}"`)

// MaskTokens replaces every valid requestState member value in m by
// TokenPlaceholder: -update writes the placeholder, never a random token.
func MaskTokens(m json.RawMessage) json.RawMessage {
	m = tokenMemberRE.ReplaceAllFunc(m, func(b []byte) []byte {
		tok := string(b[len(`"requestState":"`) : len(b)-1])
		if !ValidToken(tok) {
			return b
		}
		return []byte(`"requestState":"` + TokenPlaceholder + `"`)
	})
	return taskMemberRE.ReplaceAllFunc(m, func(b []byte) []byte {
		if bytes.HasPrefix(b, []byte(`"taskId"`)) {
			if !ValidToken(string(b[len(`"taskId":"`) : len(b)-1])) {
				return b
			}
			return []byte(`"taskId":"` + TaskIDPlaceholder + `"`)
		}
		name, _, _ := bytes.Cut(b, []byte(":"))
		return append(append(name, `:"`...), TimePlaceholder+`"`...)
	})
}

// UpdateOrder orders a run's messages for -update: arrival order, except
// that each run of consecutive messages with an id is sorted (stably) by the
// client step that first sent that id.
func UpdateOrder(f *File, msgs [][]byte) []json.RawMessage {
	rank := clientIDOrder(f)
	r := func(m []byte) int {
		k, _ := classify(m)
		if i, ok := rank[strings.TrimPrefix(k, "id:")]; ok && strings.HasPrefix(k, "id:") {
			return i
		}
		return len(rank) + 1
	}
	out := make([]json.RawMessage, 0, len(msgs))
	for i := 0; i < len(msgs); {
		if k, _ := classify(msgs[i]); k == "" {
			out = append(out, msgs[i])
			i++
			continue
		}
		j := i
		for j < len(msgs) {
			if k, _ := classify(msgs[j]); k == "" {
				break
			}
			j++
		}
		run := slices.Clone(msgs[i:j])
		slices.SortStableFunc(run, func(a, b []byte) int { return r(a) - r(b) })
		for _, m := range run {
			out = append(out, m)
		}
		i = j
	}
	return out
}

// clientIDOrder maps each id the client sent (compact JSON text) to the
// index of the first step that sent it.
func clientIDOrder(f *File) map[string]int {
	rank := map[string]int{}
	note := func(raw json.RawMessage, i int) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return
		}
		if id, ok := obj["id"]; ok {
			var b bytes.Buffer
			if json.Compact(&b, id) == nil {
				if _, seen := rank[b.String()]; !seen {
					rank[b.String()] = i
				}
			}
		}
	}
	for i, st := range f.Steps {
		if st.Kind != "send" {
			continue
		}
		d := bytes.TrimSpace(st.Data)
		if !json.Valid(d) || len(d) == 0 {
			continue
		}
		if d[0] == '[' {
			var elems []json.RawMessage
			if json.Unmarshal(d, &elems) == nil {
				for _, e := range elems {
					note(e, i)
				}
			}
			continue
		}
		note(d, i)
	}
	return rank
}
