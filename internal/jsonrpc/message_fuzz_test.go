package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecodeMessage holds DecodeMessage to encoding/json's reading of the
// same frame: -32700 exactly for text that is not one JSON object, and
// otherwise every envelope member it reports is the object's own, the id and the
// method decoded as encoding/json decodes them. Which of two values of a
// duplicated name it reports is not fixed; the message is -32600 then.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"method":"tools/call","params":{"name":"echo","arguments":{}},"id":"a\u0062","jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":-0,"result":{}}`, `{"jsonrpc":"2.0","id":1.5,"method":"x"}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}`, `{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}`,
		`{"jsonrpc":"1.0","id":1,"method":"x"}`, `{"jsonrpc":"2.0","id":1,"method":7}`, `{"jsonrpc":"2.0","id":1,"method":"x","params":3}`,
		`{"jsonrpc":"2.0","id":"\u00e9","method":"x"}`, "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"x\"}", `[{"jsonrpc":"2.0"}]`, `{"jsonrpc":"2.0"`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMessage(b)
		object := json.Valid(b) && FirstByte(b) == '{'
		if (err == ErrParse) != !object {
			t.Fatalf("DecodeMessage(%q) = %v; the text is one JSON object: %v", b, err, object)
		}
		if !object {
			return
		}
		names := memberNames(t, b)
		ms, _, _ := CheckedMembers(b, nil)
		members := map[string][]byte{}
		for k, name := range names {
			if _, seen := members[name]; seen {
				if err == nil || err.Code != CodeInvalidRequest {
					t.Fatalf("DecodeMessage(%q) = %v with a duplicated member, want -32600", b, err)
				}
				return // which of two values is reported is not fixed
			}
			members[name] = ms[k].Value
		}
		if err != nil && err.Code != CodeInvalidRequest {
			t.Fatalf("DecodeMessage(%q) = %v, want -32600 or nothing", b, err)
		}
		rawID, hasID := members["id"]
		rawMethod, hasMethod := members["method"]
		if m.HasID != hasID || m.HasMethod != hasMethod || !bytes.Equal(m.Params, members["params"]) || !bytes.Equal(m.Result, members["result"]) || !bytes.Equal(m.Error, members["error"]) {
			t.Fatalf("DecodeMessage(%q) = %+v: not the object's members %q", b, m, members)
		}
		if m.ID.Valid() {
			var v any
			dec := json.NewDecoder(bytes.NewReader(rawID))
			dec.UseNumber()
			if !bytes.Equal(m.ID.Raw(), rawID) || dec.Decode(&v) != nil {
				t.Fatalf("DecodeMessage(%q): id %q, want %q", b, m.ID.Raw(), rawID)
			}
			want := ""
			switch v := v.(type) {
			case string:
				want = "s:" + v
			case json.Number:
				if bytes.ContainsAny(rawID, ".eE") {
					t.Fatalf("id %q accepted: not an integer", rawID)
				}
				want = "n:" + strings.TrimPrefix(v.String(), "-")
				if v.String()[0] == '-' && strings.Trim(v.String(), "-0") != "" {
					want = "n:" + v.String()
				}
			default:
				t.Fatalf("id %q accepted: neither a string nor an integer", rawID)
			}
			if m.ID.Key() != want {
				t.Fatalf("id %q: key %q, want %q", rawID, m.ID.Key(), want)
			}
		}
		if err == nil {
			if !bytes.Equal(members["jsonrpc"], []byte(`"2.0"`)) || hasID && !m.ID.Valid() {
				t.Fatalf("DecodeMessage(%q) accepted a message without jsonrpc \"2.0\" or with an invalid id", b)
			}
			var method string
			if hasMethod && (json.Unmarshal(rawMethod, &method) != nil || method != m.Method) {
				t.Fatalf("DecodeMessage(%q): method %q, encoding/json reads %s", b, m.Method, rawMethod)
			}
		}
	})
}

// FuzzEncodeResponse holds EncodeResponse to encoding/json's rendering of
// the same response object, byte for byte, for any id a request can carry,
// any compact result and any error.
func FuzzEncodeResponse(f *testing.F) {
	f.Add([]byte(`1`), []byte(`{}`), false, 0, "", []byte(nil))
	f.Add([]byte(`"a\"b"`), []byte(nil), true, CodeInvalidParams, "Invalid params: <x> & \u2028 \xff", []byte(`{"supported":["2025-11-25"]}`))
	f.Add([]byte(nil), []byte(nil), true, CodeParseError, "Parse error", []byte(nil))
	f.Add([]byte(`-12`), []byte(`[1,"x",null]`), false, 0, "", []byte(nil))
	f.Fuzz(func(t *testing.T, rawID, result []byte, isErr bool, code int, message string, data []byte) {
		id, ok := ParseID(rawID)
		if !ok || !compact(rawID) { // ids are member values of validated frames
			id, rawID = ID{}, nil
		}
		type errorObject struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data,omitempty"`
		}
		type response struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id,omitempty"`
			Result  json.RawMessage `json:"result,omitempty"`
			Error   *errorObject    `json:"error,omitempty"`
		}
		want := response{JSONRPC: "2.0", ID: rawID}
		var rerr *Error
		if isErr {
			if len(data) > 0 && !compact(data) {
				return
			}
			rerr = &Error{Code: code, Message: message, Data: data}
			want.Error = &errorObject{code, message, data}
		} else {
			if !compact(result) {
				return
			}
			want.Result = result
		}
		wantText, err := marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got := EncodeResponse(id, result, rerr)
		if !bytes.Equal(got, wantText) {
			t.Fatalf("EncodeResponse = %s\nencoding/json  = %s", got, wantText)
		}
	})
}

// compact reports whether raw is one JSON value written without
// insignificant whitespace (as every result and data the engine encodes).
func compact(raw []byte) bool {
	var b bytes.Buffer
	return Valid(raw) && json.Compact(&b, raw) == nil && bytes.Equal(b.Bytes(), raw)
}
