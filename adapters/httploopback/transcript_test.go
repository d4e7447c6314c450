package httploopback_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/transcript"
)

const transcriptDir = "../../testdata/transcripts"

// skipOverHTTP are transcripts without a carriers: header that cannot pass
// over HTTP yet, each with its reason. Remove an entry once its reason is
// gone; a transcript whose answer legitimately differs on HTTP should get a
// carriers: header instead (the transcripts are not this package's).
var skipOverHTTP = map[string]string{}

// TestTranscriptsHTTP replays the shared transcripts (both eras) through a
// real loopback host: every client line is one POST with the token, the
// headers a conforming client sends, and the answers (JSON bodies, SSE
// events) are the server's messages.
func TestTranscriptsHTTP(t *testing.T) {
	leakcheck.Check(t) // after every transcript: no goroutine left (each engine ends holding no call: the binding's Stop)
	files, err := transcript.Load(transcriptDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(f.Path[strings.LastIndex(f.Path, "/")+1:], ".txt")
		t.Run(name, func(t *testing.T) {
			if why, ok := skipOverHTTP[name]; ok {
				t.Skip(why)
			}
			if len(f.Bugs) > 0 {
				// Pinned engine bugs fail TestTranscriptsStdio until fixed;
				// they run here once their bug: line is gone.
				t.Skipf("known engine bug: %s", f.Bugs[0])
			}
			t.Parallel()
			transcript.RunFile(t, httpCarrier, f, transcript.Options{Timeout: 30 * time.Second})
		})
	}
}

// httpCarrier is the loopback binding with the server name the transcripts
// expect.
var httpCarrier = transcript.Loopback{Engine: engine.Options{Name: "agentmcp-test", Version: "1.2.3"}}

// TestTranscriptsHTTPAskClient proves the binding serves with the
// transcript's ask-client: header: a modern round completes with it, and the
// same transcript fails with AskClient off.
func TestTranscriptsHTTPAskClient(t *testing.T) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	const si = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"agentmcp-test","version":"1.2.3"}}`
	text := `A modern round over HTTP.
ask-client: on
-- client --
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{},` + meta + `}}
#wait 1
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write","arguments":{},"requestState":"{{state 1}}","inputResponses":{"prompt":{"action":"accept","content":{"decision":"allow_once"}}},` + meta + `}}
#wait 2
-- server --
{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"prompt":{"method":"elicitation/create","params":{"mode":"form","message":"Allow the tool \"write\" to run once?\n\"write text\"","requestedSchema":{"type":"object","properties":{"decision":{"type":"string","title":"Decision","oneOf":[{"const":"allow_once","title":"Allow once"},{"const":"deny","title":"Deny"}]}},"required":["decision"]}}}},"requestState":"{{requestState}}",` + si + `}}
{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","content":[{"type":"text","text":"{\"success\":true,\"toolName\":\"write\"}"}],"isError":false,` + si + `}}
#calls write
`
	f, err := transcript.Parse("ask.txt", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	res, err := transcript.Play(t, httpCarrier, f, transcript.Options{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if p := transcript.Compare(f, res); len(p) != 0 {
		t.Fatalf("with ask-client: on: %q", p)
	}
	f.AskClient = false
	_, err = transcript.Play(t, httpCarrier, f, transcript.Options{Timeout: 30 * time.Second})
	// Off, id 1 is answered with the closed result, which has no
	// requestState to substitute: the run fails at the retry.
	if err == nil || !strings.Contains(err.Error(), "requestState") {
		t.Errorf("with AskClient off: err = %v, want the run to fail for want of a requestState", err)
	}
}
