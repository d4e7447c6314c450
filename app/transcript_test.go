package app_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/httpremote"
	"github.com/agentmcp/agentmcp/app"
	"github.com/agentmcp/agentmcp/carriertest"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/enginetest"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/transcript"
)

// TestTranscriptsRemote replays the shared HTTP transcripts through the
// remote host, from the same files as every other carrier: the real
// adapters/oauth verifier, an in-process TLS issuer, one genuinely signed
// access token on every request, the public Host.
func TestTranscriptsRemote(t *testing.T) {
	leakcheck.Check(t) // after every transcript: no goroutine left; each engine ends holding no call (Stop)
	iss := newTestIssuer(t)
	c := remoteCarrier{iss: iss, token: iss.token(t, false, nil)}
	files, err := transcript.Load("../testdata/transcripts")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(f.Path[len("../testdata/transcripts/"):], func(t *testing.T) {
			t.Parallel()
			transcript.RunFile(t, c, f, transcript.Options{Timeout: 30 * time.Second})
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
		Stop: func(ctx context.Context) error { return errors.Join(host.Stop(ctx), enginetest.Shutdown(ctx, eng)) },
		Wait: host.Wait,
	}), nil
}

// TestCarrierKitRemote runs the carrier conformance kit over the remote
// host: the real verifier, an in-process TLS issuer, one signed access
// token on every request (the credential hook of transcript.HTTPTarget).
func TestCarrierKitRemote(t *testing.T) {
	iss := newTestIssuer(t)
	token := iss.token(t, false, nil)
	carriertest.Test(t, carriertest.Kit{
		Name:        "remote",
		Transcripts: "../testdata/transcripts/*.txt",
		New: func(t testing.TB, eng *engine.Engine) (carriertest.Carrier, error) {
			access := remoteAccess(iss.URL())
			// The verifier's connections to the issuer, closed when the
			// check ends. The verifier clones an *http.Transport it is
			// given and never closes the clone's idle connections (their
			// issuer side would fail the goroutine check), so it gets a
			// RoundTripper it uses as is.
			tr := iss.Client().Transport.(*http.Transport).Clone()
			t.Cleanup(tr.CloseIdleConnections)
			access.HTTPClient = &http.Client{Transport: roundTripper{tr}}
			host, err := app.NewRemote(eng, remoteOptions(nil), access)
			if err != nil {
				return nil, err
			}
			return host, nil
		},
		Dial: func(t testing.TB, c carriertest.Carrier) (transcript.Conn, error) {
			addr := c.(*httpremote.Host).Addr()
			return transcript.NewHTTPConn(transcript.HTTPTarget{
				URL: "http://" + addr.String() + "/team/agent/mcp", Host: "mcp.example.test",
				Credential: func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) },
				Stop:       func(context.Context) error { return nil },
				Wait:       func() error { return nil },
			}), nil
		},
	})
}

// roundTripper hides an *http.Transport behind the RoundTripper interface.
type roundTripper struct{ http.RoundTripper }
