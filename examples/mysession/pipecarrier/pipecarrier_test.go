package pipecarrier_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"example.com/mysession"
	"example.com/mysession/pipecarrier"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/transcript"
)

// binding serves each transcript over a fresh pipe carrier.
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
	if err := c.Start(context.Background()); err != nil {
		return nil, err
	}
	conn := c.Client()
	ended := make(chan error, 1)
	go func() {
		err := c.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if serr := eng.Shutdown(ctx); err == nil {
			err = serr
		}
		ended <- err
	}()
	var waited error
	done := make(chan struct{})
	go func() { waited = <-ended; close(done) }()
	return &transcript.StreamConn{
		In:  conn,
		Out: eofReader{conn},
		End: func() error { <-done; return waited },
		Stop: func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = c.Stop(ctx)
			conn.Close()
		},
	}, nil
}

// eofReader reads the server's output. net.Pipe has no half-close: the
// end of the client's output closes the whole pipe, and the client's own
// reads then fail with io.ErrClosedPipe, which here is the end of the
// server's output (a transcript waits for every answer before it ends).
type eofReader struct{ net.Conn }

func (r eofReader) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	if errors.Is(err, io.ErrClosedPipe) {
		err = io.EOF
	}
	return n, err
}

// TestTranscripts replays the session's transcripts over the pipe carrier.
func TestTranscripts(t *testing.T) {
	transcript.Run(t, binding{}, "../testdata/*.txt", transcript.Options{
		Session: func(testing.TB) ports.Session {
			return mysession.New(map[string]string{"todo": "write the tests", "idea": "record a client"})
		},
	})
}
