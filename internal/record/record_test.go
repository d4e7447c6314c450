package record

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestTranscript records an exchange with every case the writer handles
// and checks the transcript line by line.
func TestTranscript(t *testing.T) {
	var r Recorder
	c := func(s string) { r.Client([]byte(s)) }
	s := func(s string) { r.Server([]byte(s)) }
	tok := "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	c(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"token":"Bearer abc.def"}}`)
	s(`{"jsonrpc":"2.0","id":1,"result":{"key":"sk-live-12345678"}}`)
	c(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write"}}`)
	s(`{"jsonrpc":"2.0","id":"srv-1","method":"elicitation/create","params":{}}`)
	c(`{"jsonrpc":"2.0","id":"srv-1","result":{"action":"accept","content":{"decision":"allow_once","pin":"1234"}}}`)
	s(`{"jsonrpc":"2.0","id":2,"result":{"requestState":"` + tok + `"}}`)
	s(`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`)
	c(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"requestState":"` + tok + `"}}`)
	c(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow"}}`)
	c(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}`)
	c(`# not a comment`)
	r.ClientSize(5 << 20)
	s(`{"jsonrpc":"2.0","id":3,"result":{}}`)
	got := string(r.Transcript(Options{Comment: "Test.", Secrets: []string{"sk-live-12345678", ""}, Ignore: []string{"result.x"}, AskClient: true}))
	want := `Test.
format: 1
ask-client: on
ignore: result.x
-- client --
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"token":"Bearer REDACTED"}}
#wait 1
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write"}}
#answer elicitation/create {"action":"accept","content":{"decision":"allow_once","pin":"REDACTED"}}
#wait 2
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"requestState":"{{state 2}}"}}
{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow"}}
{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}
#raw "# not a comment\n"
# (a line of 5242880 bytes, not recorded)
-- server --
#absent 4
{"jsonrpc":"2.0","id":1,"result":{"key":"REDACTED"}}
{"jsonrpc":"2.0","id":"srv-1","method":"elicitation/create","params":{}}
{"jsonrpc":"2.0","id":2,"result":{"requestState":"{{requestState}}"}}
{"jsonrpc":"2.0","method":"notifications/progress","params":{}}
{"jsonrpc":"2.0","id":3,"result":{}}
`
	if got != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(got, tok) || strings.Contains(got, "1234") || strings.Contains(got, "abc.def") {
		t.Error("a secret reached the transcript")
	}
}

// TestCopy forwards lines unchanged, records each before forwarding it,
// and records a line over MaxLine by its size only.
func TestCopy(t *testing.T) {
	long := strings.Repeat("x", MaxLine+10)
	in := "a\n" + long + "\nb"
	var out bytes.Buffer
	var lines []string
	var sizes []int
	err := Copy(&out, strings.NewReader(in), func(l []byte) {
		if strings.Contains(out.String(), string(l)+"\n") {
			t.Errorf("line %q forwarded before it was recorded", l)
		}
		lines = append(lines, string(l))
	}, func(n int) { sizes = append(sizes, n) })
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != in {
		t.Errorf("forwarded %d bytes, want the %d sent, unchanged", out.Len(), len(in))
	}
	if strings.Join(lines, ",") != "a,b" || len(sizes) != 1 || sizes[0] != len(long)+1 {
		t.Errorf("recorded lines %q and sizes %v, want a, b and one size %d", lines, sizes, len(long)+1)
	}
}

// TestTranscriptRedactsEverySpelling: a secret holding a quote and a
// backslash is redacted as it is, JSON-escaped (a tool result's text is
// an envelope's JSON inside a JSON string: escaped twice), and escaped any
// other way JSON allows (\u0071, \/); HTTP Basic credentials and a URL's
// password are redacted whatever secrets were named (issue 32).
func TestTranscriptRedactsEverySpelling(t *testing.T) {
	const secret = `sk-"quoted"\back/0123`
	var r Recorder
	envelope, _ := json.Marshal(map[string]any{"success": true, "result": map[string]string{"content": "key=" + secret}})
	result, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": string(envelope)}}})
	r.Server([]byte(`{"jsonrpc":"2.0","id":1,"result":` + string(result) + `}`))
	r.Server([]byte(`{"jsonrpc":"2.0","id":2,"result":{"text":"sk-\"\u0071uoted\"\\back\/0123"}}`))
	r.Server([]byte(`{"jsonrpc":"2.0","id":3,"result":{"text":"Authorization: Basic dXNlcjpodW50ZXIy; Basic usage stays","db":"postgres://app:hunter22@db:5432/x","plain":"https://example.com/a@b"}}`))
	r.Server([]byte(`not JSON: ` + secret))
	got := string(r.Transcript(Options{Secrets: []string{secret}}))
	for _, leak := range []string{"quoted", "dXNlcjpodW50ZXIy", "hunter22", `\u0071uoted`} {
		if strings.Contains(got, leak) {
			t.Errorf("the transcript holds %q:\n%s", leak, got)
		}
	}
	for _, kept := range []string{"Basic usage stays", "postgres://app:REDACTED@db:5432/x", "https://example.com/a@b", "Basic REDACTED", `key=REDACTED`} {
		if !strings.Contains(got, kept) {
			t.Errorf("the transcript lacks %q:\n%s", kept, got)
		}
	}
	// Every recorded JSON line stays JSON.
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "{") && !json.Valid([]byte(line)) {
			t.Errorf("not JSON after redaction: %s", line)
		}
	}
}
