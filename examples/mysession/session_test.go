package mysession_test

import (
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"example.com/mysession"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/ports/porttest"
	"github.com/agentmcp/agentmcp/transcript"
)

var update = flag.Bool("update", false, "rewrite the server sections of failing transcripts")

func newSession() *mysession.Session {
	return mysession.New(map[string]string{"todo": "write the tests", "idea": "record a client"})
}

// TestContract proves the session keeps the port's contract.
func TestContract(t *testing.T) {
	porttest.TestSession(t, func(t *testing.T) porttest.Fixture {
		s := newSession()
		return porttest.Fixture{
			Session:     s,
			ReadOnly:    porttest.Call{Tool: "note_get", Arguments: json.RawMessage(`{"key":"todo"}`)},
			Cancellable: porttest.Call{Tool: "note_count", Arguments: json.RawMessage(`{"n":3}`)},
			Guarded:     porttest.Call{Tool: "note_forget", Arguments: json.RawMessage(`{"key":"idea"}`)},
			SideEffect:  func() bool { return !s.Has("idea") },
			Turn: func(i int) (string, string) {
				p := "prompt " + string(rune('a'+i))
				return p, "noted: " + p
			},
		}
	})
}

// serverInfo is who the transcripts expect to answer.
var serverInfo = engine.Options{Name: "mysession", Version: "0.1.0"}

// TestTranscripts replays testdata/*.txt (recorded with agentmcp record)
// over agentmcp's stdio carrier and its loopback HTTP host.
func TestTranscripts(t *testing.T) {
	opts := transcript.Options{Update: *update, Session: func(testing.TB) ports.Session { return newSession() }}
	t.Run("stdio", func(t *testing.T) {
		transcript.Run(t, transcript.Stdio{Engine: serverInfo}, "testdata/*.txt", opts)
	})
	t.Run("loopback", func(t *testing.T) {
		transcript.Run(t, transcript.Loopback{Engine: serverInfo}, "testdata/*.txt", opts)
	})
}

// TestTranscriptsSeeAChange replays the same transcript against a session
// that keeps another text under "todo": the replay fails, and the failure
// names the message that differs.
func TestTranscriptsSeeAChange(t *testing.T) {
	changed := func(testing.TB) ports.Session {
		return mysession.New(map[string]string{"todo": "something else", "idea": "record a client"})
	}
	data, err := os.ReadFile("testdata/notes.txt")
	if err != nil {
		t.Fatal(err)
	}
	f, err := transcript.Parse("testdata/notes.txt", data)
	if err != nil {
		t.Fatal(err)
	}
	res, err := transcript.Play(t, transcript.Stdio{Engine: serverInfo}, f, transcript.Options{Session: changed})
	if err != nil {
		t.Fatal(err)
	}
	problems := transcript.Compare(f, res)
	if len(problems) != 1 || !strings.Contains(problems[0], "message with id 3") || !strings.Contains(problems[0], "something else") {
		t.Errorf("against a changed session: problems %q, want one naming id 3 and showing the new text", problems)
	}
}
