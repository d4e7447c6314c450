package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

// wantTSProtocolVersion is what the TypeScript SDK client negotiates: its
// latest revision. It is at least 2025-06-18, so a client declaring form
// elicitation is asked with elicitation/create on stdio (docs/SPEC.md §6's table).
const wantTSProtocolVersion = "2025-11-25"

// TestTypeScriptSDKElicitation plays the ask scenarios (ask_test.go) with
// the official TypeScript SDK client over legacy stdio: a Client declaring
// {elicitation:{}} with a handler for elicitation/create (ts/elicit.mjs)
// answers each prompt as the scenario says. With --ask-client, each prompt
// must arrive as an elicitation/create request during the call, on the
// server's own (string) id space, and only allow_once writes; without it no
// prompt arrives and nothing is written.
func TestTypeScriptSDKElicitation(t *testing.T) {
	t.Parallel()
	node := tsNode(t)
	for _, sc := range askScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			testTSElicitation(t, node, sc, true)
		})
	}
	t.Run("without_ask_client", func(t *testing.T) {
		t.Parallel()
		testTSElicitation(t, node, closedScenario(), false)
	})
}

// tsReport is what ts/elicit.mjs writes.
type tsReport struct {
	ClientCapabilities json.RawMessage `json:"clientCapabilities"`
	Calls              []callReport    `json:"calls"`
	Wire               struct {
		Sent     []json.RawMessage `json:"sent"`
		Received []json.RawMessage `json:"received"`
	} `json:"wire"`
	TransportErrors []string `json:"transportErrors"`
}

func testTSElicitation(t *testing.T, node string, sc askScenario, ask bool) {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ws := newWorkspace(t)

	args := []string{"serve", "stdio", "--root", ws.root}
	if ask {
		args = append(args, "--ask-client")
	}
	type tsCall struct {
		Arguments map[string]any `json:"arguments"`
		Answers   []promptAnswer `json:"answers"`
	}
	calls := []tsCall{}
	for _, c := range sc.calls {
		calls = append(calls, tsCall{Arguments: c.arguments(), Answers: append([]promptAnswer{}, c.answers...)})
	}
	cmd, reportPath := tsScenarioCmd(ctx, t, node, "elicit.mjs", map[string]any{
		"command": binPath, "args": args, "root": ws.root, "paths": sc.paths(ws), "calls": calls,
	})
	out, err := cmd.CombinedOutput()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node elicit.mjs output (the server's stderr included):\n%s", out)
		}
	})
	if err != nil {
		t.Fatalf("TypeScript SDK client: %v", err)
	}
	checkNoDataRace(t, out)
	var report tsReport
	readTSReport(t, reportPath, &report)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("wire, client to server:\n%s", joinRaw(report.Wire.Sent))
			t.Logf("wire, server to client:\n%s", joinRaw(report.Wire.Received))
		}
	})

	checkAskScenario(t, sc, ws, report.Calls)
	checkLegacyElicitations(t, sc, report)
}

// wireMessage is one recorded JSON-RPC message.
type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// checkLegacyElicitations checks the TypeScript client's wire traffic: the
// handshake negotiated the SDK's latest legacy revision with the
// elicitation capability declared; every prompt the handler saw came as an
// elicitation/create request with a string id of the server's own and was
// answered with the scenario's answer; nothing was cancelled and no
// input-required round reached this legacy client.
func checkLegacyElicitations(t *testing.T, sc askScenario, report tsReport) {
	t.Helper()
	if len(report.TransportErrors) > 0 {
		t.Errorf("transport errors: %q", report.TransportErrors)
	}
	decode := func(raws []json.RawMessage) []wireMessage {
		msgs := make([]wireMessage, len(raws))
		for i, raw := range raws {
			if err := json.Unmarshal(raw, &msgs[i]); err != nil {
				t.Fatalf("recorded message %s: %v", raw, err)
			}
		}
		return msgs
	}
	sent, received := decode(report.Wire.Sent), decode(report.Wire.Received)

	// The handshake.
	if len(sent) == 0 || sent[0].Method != "initialize" {
		t.Fatalf("the client did not begin with initialize")
	}
	var init struct {
		Capabilities struct {
			Elicitation json.RawMessage `json:"elicitation"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(sent[0].Params, &init); err != nil || init.Capabilities.Elicitation == nil {
		t.Errorf("initialize params %s do not declare elicitation", sent[0].Params)
	}
	var negotiated struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	for _, m := range received {
		if m.Method == "" && string(m.ID) == string(sent[0].ID) {
			_ = json.Unmarshal(m.Result, &negotiated)
		}
	}
	if negotiated.ProtocolVersion != wantTSProtocolVersion {
		t.Errorf("negotiated protocol version %q, want %q", negotiated.ProtocolVersion, wantTSProtocolVersion)
	}

	// Every elicitation/create, and the client's answer to it.
	var answers []promptAnswer
	for _, c := range sc.calls {
		answers = append(answers, c.answers...)
	}
	var ids []string
	for _, m := range received {
		switch {
		case m.Method == "elicitation/create":
			n := len(ids)
			ids = append(ids, string(m.ID))
			if len(m.ID) == 0 || m.ID[0] != '"' {
				t.Errorf("elicitation/create %d has id %s, want a string of the server's own id space (docs/SPEC.md §6)", n+1, m.ID)
			}
			if slices.Contains(ids[:n], string(m.ID)) {
				t.Errorf("elicitation/create %d reuses id %s", n+1, m.ID)
			}
			if n >= len(answers) {
				continue // reported by checkAskScenario
			}
			reply, ok := findResponse(sent, m.ID)
			var got promptAnswer
			if ok {
				ok = json.Unmarshal(reply.Result, &got) == nil
			}
			if !ok || got.Action != answers[n].Action || fmt.Sprint(got.Content) != fmt.Sprint(answers[n].Content) {
				t.Errorf("elicitation/create %s: the client answered %s %s, want the result %v", m.ID, reply.Result, reply.Error, answers[n])
			}
		case m.Method == "notifications/cancelled":
			t.Errorf("the server cancelled one of its requests although every call waited for its answer: %s", m.Params)
		case m.Method != "":
			t.Errorf("unexpected message from the server: method %s", m.Method)
		default:
			var r struct {
				ResultType *string `json:"resultType"`
			}
			if json.Unmarshal(m.Result, &r) == nil && r.ResultType != nil {
				t.Errorf("a legacy client got a result with resultType %q (id %s)", *r.ResultType, m.ID)
			}
		}
	}
	var prompts int
	for _, c := range report.Calls {
		prompts += len(c.Prompts)
	}
	if len(ids) != prompts {
		t.Errorf("%d elicitation/create requests on the wire, but the handler saw %d prompts", len(ids), prompts)
	}
}

// findResponse returns the response among msgs to the request with id.
func findResponse(msgs []wireMessage, id json.RawMessage) (wireMessage, bool) {
	for _, m := range msgs {
		if m.Method == "" && string(m.ID) == string(id) {
			return m, true
		}
	}
	return wireMessage{}, false
}

// checkNoDataRace fails t when a node run's output, which holds the
// server's stderr, reports a data race: the TypeScript client does not
// report the server's exit status, so a race in a -race binary would
// otherwise pass unseen.
func checkNoDataRace(t *testing.T, out []byte) {
	t.Helper()
	if bytes.Contains(out, []byte("WARNING: DATA RACE")) {
		t.Errorf("the server reported a data race on its stderr")
	}
}

func joinRaw(raws []json.RawMessage) string {
	var s string
	for _, r := range raws {
		s += string(r) + "\n"
	}
	return s
}
