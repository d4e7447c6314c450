package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// CheckServerFrame reports whether b is one thing a server may write as one
// frame: a compact JSON text without a newline holding one JSON-RPC 2.0
// message — a response (an id that is a string or an integer, or no id for
// an error, and exactly one of result and error, the error with an integer
// code and a string message), a notification or request (a string method)
// — or a non-empty array of such messages (a batch answer). The fuzzers and
// the transcript runner use it on every frame the server writes.
func CheckServerFrame(b []byte) error {
	if len(b) == 0 {
		return errors.New("empty frame")
	}
	if bytes.IndexByte(b, '\n') >= 0 {
		return errors.New("frame contains a newline")
	}
	if !json.Valid(b) {
		return errors.New("frame is not valid JSON")
	}
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil || !bytes.Equal(c.Bytes(), b) {
		return errors.New("frame is not compact JSON")
	}
	if b[0] == '[' {
		var elems []json.RawMessage
		if err := json.Unmarshal(b, &elems); err != nil {
			return err
		}
		if len(elems) == 0 {
			return errors.New("empty batch answer")
		}
		for i, e := range elems {
			if err := checkMessage(e); err != nil {
				return fmt.Errorf("batch element %d: %w", i, err)
			}
		}
		return nil
	}
	return checkMessage(b)
}

func checkMessage(b []byte) error {
	if len(b) == 0 || b[0] != '{' {
		return errors.New("not a JSON object")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return errors.New(`jsonrpc is not "2.0"`)
	}
	for k := range m {
		switch k {
		case "jsonrpc", "id", "method", "params", "result", "error":
		default:
			return fmt.Errorf("unexpected member %q", k)
		}
	}
	id, hasID := m["id"]
	if hasID && !validID(id) {
		return fmt.Errorf("id %s is neither a string nor an integer", id)
	}
	if method, ok := m["method"]; ok {
		var s string
		if json.Unmarshal(method, &s) != nil || method[0] != '"' {
			return errors.New("method is not a string")
		}
		if _, ok := m["result"]; ok {
			return errors.New("a request or notification with a result")
		}
		if _, ok := m["error"]; ok {
			return errors.New("a request or notification with an error")
		}
		return nil
	}
	res, hasRes := m["result"]
	e, hasErr := m["error"]
	switch {
	case hasRes == hasErr:
		return errors.New("a response needs exactly one of result and error")
	case hasRes:
		if !hasID {
			return errors.New("a result without an id")
		}
		if res[0] != '{' {
			return errors.New("result is not an object")
		}
	default:
		var eo struct {
			Code    *json.Number `json:"code"`
			Message *string      `json:"message"`
		}
		if e[0] != '{' || json.Unmarshal(e, &eo) != nil || eo.Code == nil || eo.Message == nil {
			return errors.New("error is not {code, message}")
		}
		if _, err := eo.Code.Int64(); err != nil {
			return fmt.Errorf("error code %s is not an integer", *eo.Code)
		}
	}
	return nil
}

func validID(raw json.RawMessage) bool {
	switch {
	case len(raw) == 0:
		return false
	case raw[0] == '"':
		var s string
		return json.Unmarshal(raw, &s) == nil
	default:
		var n json.Number
		return json.Unmarshal(raw, &n) == nil && !strings.ContainsAny(string(raw), ".eE+")
	}
}
