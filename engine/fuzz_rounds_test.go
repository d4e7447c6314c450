package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/transcript"
)

const roundMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

// retryBody is a retry of the write call (id 2) with the given raw
// requestState and inputResponses values.
func retryBody(state, responses string) string {
	return `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write","arguments":{"text":"x"},` +
		`"requestState":` + state + `,"inputResponses":` + responses + `,` + roundMeta + `}}`
}

// writeHeaders carries the MCP headers a 2026-07-28 tools/call of "write"
// sends beside its body; without them Exchange answers -32020.
var writeHeaders = engine.ExchangeOptions{Headers: engine.Headers{
	ProtocolVersion: "2026-07-28", HasProtocolVersion: true,
	Method: "tools/call", HasMethod: true,
	Name: "write", HasName: true,
}}

const allowOnceAnswer = `{"prompt":{"action":"accept","content":{"decision":"allow_once"}}}`

type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		ResultType   string `json:"resultType"`
		RequestState string `json:"requestState"`
		IsError      bool   `json:"isError"`
		Content      []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code int `json:"code"`
	} `json:"error"`
}

// FuzzRoundRetry fuzzes the retry of an input-required round (docs/SPEC.md
// §6): a write call is parked under a real requestState, then retried with
// a fuzzed requestState value ("$STATE" stands for the real token) and a
// fuzzed inputResponses value. The answer must be one JSON-RPC response
// with the retry's id. Unless the requestState is the real token (as any
// JSON string spelling it) and inputResponses an object, it is -32602 and
// the round is not used up: a proper retry then still completes the call.
// With both right, the call resumes: a complete result, or the same prompt
// again (input_required) when the answer is missing.
func FuzzRoundRetry(f *testing.F) {
	for _, seed := range [][2]string{
		{`"$STATE"`, allowOnceAnswer},
		{`"$STATE"`, `{"prompt":{"action":"decline"}}`},
		{`"$STATE"`, `{"prompt":{"action":"cancel"}}`},
		{`"$STATE"`, `{"prompt":{"action":"accept","content":{"decision":"deny"}}}`},
		{`"$STATE"`, `{"prompt":{"action":"accept","content":{"decision":"maybe","x":1}},"other":[]}`},
		{`"$STATE"`, `{"prompt":"allow_once"}`},
		{`"$STATE"`, `{}`},
		{`"$STATE"`, `[]`},
		{`"$STATE"`, `null`},
		{`"\u0041$STATE"`, allowOnceAnswer},
		{`"$STATE$STATE"`, allowOnceAnswer},
		{`"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"`, allowOnceAnswer},
		{`42`, allowOnceAnswer},
		{`null`, `{}`},
		{`["$STATE"]`, allowOnceAnswer},
		{`"$STATE"`, `{"":{},"":[]}`},
		{`"$STATE"`, `{"prompt":{"action":"decline"},"pr\u006fmpt":{"action":"decline"}}`},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, stateRaw, responsesRaw string) {
		eng, err := engine.New(fake.New(), engine.Options{AskClient: true})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := eng.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		}()
		ctx := context.Background()
		first := eng.Exchange(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{"text":"x"},`+roundMeta+`}}`), writeHeaders)
		var a rpcAnswer
		if err := json.Unmarshal(first.Body, &a); err != nil || a.Result == nil || a.Result.ResultType != "input_required" {
			t.Fatalf("first call: %s", first.Body)
		}
		token := a.Result.RequestState
		state := strings.ReplaceAll(stateRaw, "$STATE", token)
		if !json.Valid([]byte(state)) || !json.Valid([]byte(responsesRaw)) {
			return // not one JSON value each: the decoder's fuzzers cover that
		}
		body := retryBody(state, responsesRaw)
		r := eng.Exchange(ctx, []byte(body), writeHeaders)
		if err := transcript.CheckServerFrame(r.Body); err != nil {
			t.Fatalf("retry answer is not one JSON-RPC message (%v): %s", err, r.Body)
		}
		a = rpcAnswer{}
		if err := json.Unmarshal(r.Body, &a); err != nil {
			t.Fatal(err)
		}
		var decoded string
		stateOK := json.Unmarshal([]byte(state), &decoded) == nil && decoded == token
		var obj map[string]json.RawMessage
		responsesOK := json.Unmarshal([]byte(responsesRaw), &obj) == nil && obj != nil &&
			!namesAKeyTwice(responsesRaw) // docs/SPEC.md §6: -32602, nothing answered
		switch {
		case string(a.ID) != "2":
			t.Fatalf("retry answered with id %s: %s", a.ID, r.Body)
		case !stateOK || !responsesOK:
			if a.Error == nil || a.Error.Code != engine.CodeInvalidParams {
				t.Fatalf("retry with requestState %s and inputResponses %s: %s, want -32602", state, responsesRaw, r.Body)
			}
			// The round was not used up: the proper retry completes it.
			r = eng.Exchange(ctx, []byte(retryBody(`"`+token+`"`, allowOnceAnswer)), writeHeaders)
			a = rpcAnswer{}
			if json.Unmarshal(r.Body, &a) != nil || a.Result == nil || a.Result.ResultType != "complete" || a.Result.IsError {
				t.Fatalf("the proper retry after a refused one: %s, want the call completed", r.Body)
			}
		case a.Error != nil:
			t.Fatalf("retry with the real requestState and an object: %s, want a result", r.Body)
		case a.Result.ResultType != "complete" && a.Result.ResultType != "input_required":
			t.Fatalf("retry: resultType %q: %s", a.Result.ResultType, r.Body)
		}
	})
}

// namesAKeyTwice reports whether the JSON object raw names a member twice
// (names compared once decoded, so an escaped spelling is the same name),
// read with encoding/json's tokenizer, independently of the engine's reader.
func namesAKeyTwice(raw string) bool {
	d := json.NewDecoder(strings.NewReader(raw))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	seen := make(map[string]bool)
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		name, _ := tok.(string)
		if seen[name] {
			return true
		}
		seen[name] = true
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return false
		}
	}
	return false
}
