package stdio_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/carriertest"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/transcript"
)

// kitTransport is a stdio.Transport over in-memory pipes, with the client's
// ends for Dial.
type kitTransport struct {
	*stdio.Transport
	inW  *io.PipeWriter
	outR *io.PipeReader
	outW *io.PipeWriter
}

// TestCarrierKit runs the carrier conformance kit over the stdio carrier.
func TestCarrierKit(t *testing.T) {
	carriertest.Test(t, carriertest.Kit{
		Name:        "stdio",
		Transcripts: "../../testdata/transcripts/*.txt",
		New: func(t testing.TB, eng *engine.Engine) (carriertest.Carrier, error) {
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			tr, err := stdio.New(eng, stdio.Options{Stdin: inR, Stdout: outW})
			if err != nil {
				return nil, err
			}
			return &kitTransport{Transport: tr, inW: inW, outR: outR, outW: outW}, nil
		},
		Dial: func(t testing.TB, c carriertest.Carrier) (transcript.Conn, error) {
			k := c.(*kitTransport)
			waited := make(chan struct{})
			var waitErr error
			go func() {
				waitErr = k.Wait()
				// The transport never closes stdout itself.
				k.outW.Close()
				close(waited)
			}()
			return &transcript.StreamConn{
				In: k.inW, Out: k.outR,
				End: func() error { <-waited; return waitErr },
				Stop: func() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					k.inW.CloseWithError(errors.New("aborted"))
					_ = k.Stop(ctx)
					k.outR.CloseWithError(errors.New("aborted"))
				},
			}, nil
		},
	})
}
