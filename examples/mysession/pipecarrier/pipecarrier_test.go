package pipecarrier_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"example.com/mysession"
	"example.com/mysession/pipecarrier"
	"github.com/agentmcp/agentmcp/carriertest"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/transcript"
)

// kit builds the pipe carrier and reaches it through its one connection.
var kit = carriertest.Kit{
	Name: "pipe",
	New: func(t testing.TB, eng *engine.Engine) (carriertest.Carrier, error) {
		return pipecarrier.New(eng)
	},
	Dial: func(t testing.TB, c carriertest.Carrier) (transcript.Conn, error) {
		client := c.(*pipecarrier.Carrier).Client()
		return &transcript.StreamConn{
			In:  closeWrite{client},
			Out: eofReader{client},
			// The carrier serves one connection: its end is the carrier's.
			End:  c.Wait,
			Stop: func() { client.Close() },
		}, nil
	},
}

// TestCarrierKit runs agentmcp's carrier conformance kit: the lifecycle
// and every shared transcript meant for any carrier.
func TestCarrierKit(t *testing.T) { carriertest.Test(t, kit) }

// TestTranscripts replays the session's own transcripts over the pipe.
func TestTranscripts(t *testing.T) {
	b := binding{}
	transcript.Run(t, b, "../testdata/*.txt", transcript.Options{
		Session: func(testing.TB) ports.Session {
			return mysession.New(map[string]string{"todo": "write the tests", "idea": "record a client"})
		},
	})
}

// binding serves one transcript over a fresh pipe carrier with the
// session's server name.
type binding struct{}

func (binding) Name() string { return "pipe" }

func (binding) Connect(t testing.TB, s ports.Session, cfg transcript.Config) (transcript.Conn, error) {
	eng, err := engine.New(s, engine.Options{Name: "mysession", Version: "0.1.0", AskClient: cfg.AskClient})
	if err != nil {
		return nil, err
	}
	c, err := pipecarrier.New(eng)
	if err != nil {
		return nil, err
	}
	if err := c.Start(t.Context()); err != nil {
		return nil, err
	}
	conn, err := kit.Dial(t, c)
	if err != nil {
		return nil, err
	}
	return &withEngine{Conn: conn, c: c, eng: eng}, nil
}

// withEngine shuts the engine down after the carrier ends, as a
// composition root does.
type withEngine struct {
	transcript.Conn
	c   *pipecarrier.Carrier
	eng *engine.Engine
}

func (w *withEngine) Wait() error {
	return errors.Join(w.Conn.Wait(), w.eng.Shutdown(context.Background()))
}

func (w *withEngine) Abort() {
	w.Conn.Abort()
	_ = w.c.Stop(context.Background())
}

type closeWrite struct{ *pipecarrier.Client }

func (c closeWrite) Close() error { return c.CloseWrite() }

// eofReader reads the server's output; the pipe closed by the server is
// its end.
type eofReader struct{ *pipecarrier.Client }

func (r eofReader) Read(p []byte) (int, error) {
	n, err := r.Client.Read(p)
	if errors.Is(err, io.ErrClosedPipe) {
		err = io.EOF
	}
	return n, err
}
