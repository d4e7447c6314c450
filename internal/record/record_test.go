package record

import (
	"bytes"
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
