package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/app"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/transcript"
	"github.com/agentmcp/agentmcp/ports"
)

// TestTranscriptsRemote replays the shared HTTP transcripts through the
// remote host, from the same files as every other carrier: the real
// adapters/oauth verifier, an in-process TLS issuer, one genuinely signed
// access token on every request, the public Host.
func TestTranscriptsRemote(t *testing.T) {
	iss := newTestIssuer(t)
	c := remoteCarrier{iss: iss, token: iss.token(t, false, nil)}
	files, err := transcript.Load("../testdata/transcripts")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(f.Path[len("../testdata/transcripts/"):], func(t *testing.T) {
			t.Parallel()
			transcript.Run(t, c, f, transcript.Options{Timeout: 30 * time.Second})
		})
	}
}

type remoteCarrier struct {
	iss   *testIssuer
	token string
}

func (remoteCarrier) Name() string { return "remote" }

// Connect serves s on a fresh remote host: the carriers: header names it
// "remote"; transcripts without one run on every carrier.
func (c remoteCarrier) Connect(t testing.TB, s ports.Session, cfg transcript.Config) (transcript.Conn, error) {
	eng, err := engine.New(s, engine.Options{Name: "agentmcp-test", Version: "1.2.3", AskClient: cfg.AskClient})
	if err != nil {
		return nil, err
	}
	access := remoteAccess(c.iss.URL())
	access.HTTPClient = c.iss.Client()
	host, err := app.NewRemote(eng, remoteOptions(nil), access)
	if err != nil {
		return nil, err
	}
	err = host.Start(context.Background())
	if err != nil {
		return nil, err
	}
	addr := host.Addr()
	return transcript.NewHTTPConn(transcript.HTTPTarget{
		URL: "http://" + addr.String() + "/team/agent/mcp", Host: "mcp.example.test", Token: c.token,
		Stop: func(ctx context.Context) error { return errors.Join(host.Stop(ctx), eng.Shutdown(ctx)) },
		Wait: host.Wait,
	}), nil
}
