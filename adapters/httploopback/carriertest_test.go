package httploopback_test

import (
	"context"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/httploopback"
	"github.com/agentmcp/agentmcp/carriertest"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/transcript"
)

// kitHost is a loopback host with the endpoint its Start reported.
type kitHost struct {
	*httploopback.Host
	ep httploopback.Endpoint
}

func (h *kitHost) Start(ctx context.Context) error {
	ep, err := h.Host.Start(ctx)
	if err == nil {
		h.ep = ep
	}
	return err
}

// TestCarrierKit runs the carrier conformance kit over the loopback host:
// each Dial is a client posting with the host's token.
func TestCarrierKit(t *testing.T) {
	carriertest.Test(t, carriertest.Kit{
		Name:        "http",
		Transcripts: transcriptDir + "/*.txt",
		New: func(t testing.TB, eng *engine.Engine) (carriertest.Carrier, error) {
			h, err := httploopback.New(eng, httploopback.Options{})
			if err != nil {
				return nil, err
			}
			return &kitHost{Host: h}, nil
		},
		Dial: func(t testing.TB, c carriertest.Carrier) (transcript.Conn, error) {
			h := c.(*kitHost)
			return transcript.NewHTTPConn(transcript.HTTPTarget{
				URL: h.ep.URL, Token: h.ep.Token,
				// The connection ends with its requests; the kit stops the host.
				Stop: func(context.Context) error { return nil },
				Wait: func() error { return nil },
			}), nil
		},
	})
}
