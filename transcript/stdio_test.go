package transcript_test

import (
	"flag"
	"testing"

	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/transcript"
)

var update = flag.Bool("update", false, "rewrite the server sections of failing transcripts from the actual output")

const transcriptDir = "../testdata/transcripts"

// TestTranscriptsStdio replays every transcript through the real stdio
// carrier over in-memory pipes, each in a synctest bubble.
func TestTranscriptsStdio(t *testing.T) {
	transcript.Run(t, stdioCarrier, transcriptDir+"/*.txt", transcript.Options{Update: *update, Bubble: true})
}

// stdioCarrier is the stdio binding with the server name the transcripts
// expect.
var stdioCarrier = transcript.Stdio{Engine: engine.Options{Name: "agentmcp-test", Version: "1.2.3"}}
