package unixsocket_test

import (
	"net"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/unixsocket"
	"github.com/agentmcp/agentmcp/carriertest"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/transcript"
)

// TestCarrierKit runs the carrier conformance kit over the Unix-socket
// carrier: one connection per Dial, its end of input a half-close.
func TestCarrierKit(t *testing.T) {
	carriertest.Test(t, carriertest.Kit{
		Name:        "unix",
		Transcripts: transcriptDir + "/*.txt",
		New: func(t testing.TB, eng *engine.Engine) (carriertest.Carrier, error) {
			return unixsocket.New(eng, unixsocket.Options{Path: socketPath(t)})
		},
		Dial: func(t testing.TB, c carriertest.Carrier) (transcript.Conn, error) {
			conn, err := net.Dial("unix", c.(*unixsocket.Server).Path())
			if err != nil {
				return nil, err
			}
			out := &eofReader{r: conn, eof: make(chan struct{})}
			return &transcript.StreamConn{
				In:  halfClose{conn.(*net.UnixConn)},
				Out: out,
				// The server ends this connection's stream at the end of
				// input (after its drain) and closes it.
				End:  func() error { <-out.eof; return conn.Close() },
				Stop: func() { conn.Close() },
			}, nil
		},
	})
}
