package transcript_test

import (
	"context"
	"errors"
	"flag"
	"io"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/transcript"
	"github.com/agentmcp/agentmcp/ports"
)

var update = flag.Bool("update", false, "rewrite the server sections of failing transcripts from the actual output")

const transcriptDir = "../../testdata/transcripts"

// TestTranscriptsStdio replays every transcript through the real stdio
// carrier over in-memory pipes, each in a synctest bubble.
func TestTranscriptsStdio(t *testing.T) {
	transcript.RunAll(t, transcriptDir, stdioCarrier{}, transcript.Options{Update: *update, Bubble: true})
}

// stdioCarrier binds the stdio carrier to the transcript runner: a real
// stdio.Transport whose stdin and stdout are io.Pipes, with AskClient as the
// transcript's ask-client: header says.
type stdioCarrier struct{}

func (stdioCarrier) Name() string { return "stdio" }

func (stdioCarrier) Connect(t testing.TB, s ports.Session, cfg transcript.Config) (transcript.Conn, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	eng, err := engine.New(s, engine.Options{Name: "agentmcp-test", Version: "1.2.3", AskClient: cfg.AskClient})
	if err != nil {
		return nil, err
	}
	tr, err := stdio.New(eng, stdio.Options{Stdin: inR, Stdout: outW})
	if err != nil {
		return nil, err
	}
	if err := tr.Start(context.Background()); err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	waited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = tr.Wait()
		// The composition root's part: the engine ends with its carrier.
		if err := eng.Shutdown(context.Background()); err != nil && waitErr == nil {
			waitErr = err
		}
		// The transport never closes stdout itself; closing our end of it
		// lets the reader see the end once serving has ended.
		outW.Close()
		close(waited)
	}()
	return &transcript.StreamConn{
		In: inW, Out: outR,
		End: func() error { <-waited; return waitErr },
		Stop: func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			inW.CloseWithError(errors.New("transcript aborted"))
			_ = tr.Stop(ctx)
			outR.CloseWithError(errors.New("transcript aborted"))
		},
	}, nil
}
