package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
)

// invalidShape is a message that breaks a rule of JSON-RPC or of the
// envelope, as its members (name and raw value, the id left out): every
// order of them, with an id member added at each place, must be answered
// with code and that id (docs/SPEC.md §4; K2, K3).
type invalidShape struct {
	name    string
	members [][2]string
	code    int
	kind    engine.Outcome // Exchange's kind with an id
	// noIDKind is Exchange's kind without an id member: Accepted (no
	// answer at all) for a notification, Invalid for a message that has no
	// method either (answered without an id).
	noIDKind engine.Outcome
}

var invalidShapes = []invalidShape{
	{"jsonrpc 1.0", [][2]string{{"jsonrpc", `"1.0"`}, {"method", `"ping"`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"jsonrpc missing", [][2]string{{"method", `"ping"`}, {"params", `{}`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"jsonrpc a number", [][2]string{{"jsonrpc", `2.0`}, {"method", `"tools/list"`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"jsonrpc null", [][2]string{{"jsonrpc", `null`}, {"method", `"ping"`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"method a number", [][2]string{{"jsonrpc", `"2.0"`}, {"method", `42`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"method null", [][2]string{{"jsonrpc", `"2.0"`}, {"method", `null`}, {"params", `{}`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"method an object", [][2]string{{"jsonrpc", `"2.0"`}, {"method", `{"name":"ping"}`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"method an array", [][2]string{{"jsonrpc", `"2.0"`}, {"method", `["ping"]`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"method true", [][2]string{{"jsonrpc", `"2.0"`}, {"method", `true`}, {"params", `[]`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"method escaped name, a number", [][2]string{{"jsonrpc", `"2.0"`}, {`\u006dethod`, `7`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"params a string", [][2]string{{"jsonrpc", `"2.0"`}, {"method", `"tools/list"`}, {"params", `"x"`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"params a number", [][2]string{{"jsonrpc", `"2.0"`}, {"method", `"tools/call"`}, {"params", `5`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"params null", [][2]string{{"jsonrpc", `"2.0"`}, {"method", `"ping"`}, {"params", `null`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"result and method", [][2]string{{"jsonrpc", `"2.0"`}, {"method", `"ping"`}, {"result", `{}`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"error and method", [][2]string{{"jsonrpc", `"2.0"`}, {"method", `"ping"`}, {"error", `{"code":1,"message":"x"}`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"result and error", [][2]string{{"jsonrpc", `"2.0"`}, {"result", `{}`}, {"error", `{"code":1,"message":"x"}`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Invalid},
	{"neither result nor error", [][2]string{{"jsonrpc", `"2.0"`}, {"params", `{}`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Invalid},
	{"duplicate method", [][2]string{{"jsonrpc", `"2.0"`}, {"method", `"ping"`}, {"method", `"ping"`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"duplicate jsonrpc", [][2]string{{"jsonrpc", `"2.0"`}, {"jsonrpc", `"2.0"`}, {"method", `"ping"`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"duplicate params", [][2]string{{"jsonrpc", `"2.0"`}, {"method", `"tools/list"`}, {"params", `{}`}, {"params", `{}`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"duplicate member in params", [][2]string{{"jsonrpc", `"2.0"`}, {"method", `"tools/call"`}, {"params", `{"name":"echo","name":"echo"}`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"bad jsonrpc and bad method", [][2]string{{"jsonrpc", `"3.0"`}, {"method", `false`}, {"params", `"p"`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"extra members", [][2]string{{"jsonrpc", `"2.0"`}, {"method", `1`}, {"x", `{"id":99}`}, {"y", `[1,2]`}}, engine.CodeInvalidRequest, engine.Invalid, engine.Accepted},
	{"empty method", [][2]string{{"jsonrpc", `"2.0"`}, {"method", `""`}, {"params", `{}`}}, engine.CodeMethodNotFound, engine.Answered, engine.Accepted},
}

// permutations calls f with every order of the indexes 0..n-1.
func permutations(n int, f func([]int)) {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	var rec func(k int)
	rec = func(k int) {
		if k == n {
			f(p)
			return
		}
		for i := k; i < n; i++ {
			p[k], p[i] = p[i], p[k]
			rec(k + 1)
			p[k], p[i] = p[i], p[k]
		}
	}
	rec(0)
}

// object writes members in order as a JSON object.
func object(members [][2]string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + m[0] + `":` + m[1])
	}
	b.WriteByte('}')
	return b.String()
}

// variant is one message of a shape: its text and the raw id it carries
// ("" for none).
type variant struct{ text, id string }

// variants returns every order of the shape's members, each with an id
// member at every place (integer and string ids alternating, each
// distinct), and every order without an id.
func (s invalidShape) variants(next *int) (withID, withoutID []variant) {
	n := len(s.members)
	permutations(n+1, func(p []int) {
		*next++
		id := fmt.Sprint(*next)
		if *next%2 == 0 {
			id = `"p-` + id + `"`
		}
		ms := make([][2]string, 0, n+1)
		for _, i := range p {
			if i == n {
				ms = append(ms, [2]string{"id", id})
			} else {
				ms = append(ms, s.members[i])
			}
		}
		withID = append(withID, variant{object(ms), id})
	})
	permutations(n, func(p []int) {
		ms := make([][2]string, 0, n)
		for _, i := range p {
			ms = append(ms, s.members[i])
		}
		withoutID = append(withoutID, variant{object(ms), ""})
	})
	return withID, withoutID
}

type answer struct {
	ID    json.RawMessage `json:"id"`
	Error *struct {
		Code int `json:"code"`
	} `json:"error"`
}

// TestInvalidMessagesKeepTheirIDInEveryMemberOrder is a property over
// member permutations: for invalid messages of many shapes, every order of
// the members, with the id anywhere, gets exactly one answer carrying that
// id byte for byte and the shape's code — on a stream (ServeConn) and
// through Exchange with the shape's status — and every order without an id
// member gets no answer with an id (a notification none at all).
func TestInvalidMessagesKeepTheirIDInEveryMemberOrder(t *testing.T) {
	eng, err := engine.New(fake.New(), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = eng.Shutdown(context.Background()) }()
	next := 0
	total := 0
	for _, s := range invalidShapes {
		withID, withoutID := s.variants(&next)
		total += len(withID) + len(withoutID)
		t.Run(s.name, func(t *testing.T) {
			// Through Exchange.
			for _, v := range withID {
				r := eng.Exchange(context.Background(), []byte(v.text), engine.ExchangeOptions{})
				var a answer
				if r.Kind != s.kind || json.Unmarshal(r.Body, &a) != nil || string(a.ID) != v.id || a.Error == nil || a.Error.Code != s.code {
					t.Errorf("Exchange(%s) = %v %s; want kind %v, code %d, id %s", v.text, r.Kind, r.Body, s.kind, s.code, v.id)
				}
			}
			for _, v := range withoutID {
				r := eng.Exchange(context.Background(), []byte(v.text), engine.ExchangeOptions{})
				var a answer
				switch {
				case r.Kind != s.noIDKind:
					t.Errorf("Exchange(%s) without an id = %v %s; want kind %v", v.text, r.Kind, r.Body, s.noIDKind)
				case r.Kind == engine.Accepted && len(r.Body) != 0:
					t.Errorf("Exchange(%s): a notification was answered %s", v.text, r.Body)
				case len(r.Body) > 0 && (json.Unmarshal(r.Body, &a) != nil || a.ID != nil):
					t.Errorf("Exchange(%s) without an id answered %s, with an id", v.text, r.Body)
				}
			}
			// On a stream: every line answered in order, or not at all.
			var in bytes.Buffer
			for _, v := range withoutID {
				in.WriteString(v.text + "\n")
			}
			for _, v := range withID {
				in.WriteString(v.text + "\n")
			}
			var out bytes.Buffer
			if err := eng.ServeConn(context.Background(), &in, &out, engine.ConnOptions{}); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(&out)
			sc.Buffer(nil, 1<<20)
			var lines []string
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			want := len(withID)
			if s.noIDKind != engine.Accepted {
				want += len(withoutID)
			}
			if len(lines) != want {
				t.Fatalf("%d answers on the stream, want %d", len(lines), want)
			}
			got := lines
			if s.noIDKind != engine.Accepted {
				for i, l := range lines[:len(withoutID)] {
					var a answer
					if json.Unmarshal([]byte(l), &a) != nil || a.ID != nil || a.Error == nil || a.Error.Code != engine.CodeInvalidRequest {
						t.Errorf("stream answer to %s: %s, want -32600 without an id", withoutID[i].text, l)
					}
				}
				got = lines[len(withoutID):]
			}
			for i, v := range withID {
				var a answer
				if json.Unmarshal([]byte(got[i]), &a) != nil || string(a.ID) != v.id || a.Error == nil || a.Error.Code != s.code {
					t.Errorf("stream answer to %s: %s, want code %d with id %s", v.text, got[i], s.code, v.id)
				}
			}
		})
	}
	t.Logf("%d messages in %d shapes", total, len(invalidShapes))
}
