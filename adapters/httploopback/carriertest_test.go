package httploopback_test

import (
	"context"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/httploopback"
	"github.com/agentmcp/agentmcp/carriertest"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/transcript"
)

// TestCarrierKit runs the carrier conformance kit over the loopback host:
// each Dial is a client posting with the host's token.
func TestCarrierKit(t *testing.T) {
	carriertest.Test(t, carriertest.Kit{
		Name:        "http",
		Transcripts: transcriptDir + "/*.txt",
		New: func(t testing.TB, eng *engine.Engine) (carriertest.Carrier, error) {
			return httploopback.New(eng, httploopback.Options{})
		},
		Dial: func(t testing.TB, c carriertest.Carrier) (transcript.Conn, error) {
			ep := c.(*httploopback.Host).Endpoint()
			return transcript.NewHTTPConn(transcript.HTTPTarget{
				URL: ep.URL, Token: ep.Token,
				// The connection ends with its requests; the kit stops the host.
				Stop: func(context.Context) error { return nil },
				Wait: func() error { return nil },
			}), nil
		},
	})
}
