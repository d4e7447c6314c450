// Package fuzzhttp feeds fuzzed HTTP requests to the hosts' composed
// handlers (admission in front of the Streamable HTTP framing) and checks
// what they answer against docs/SPEC.md §4 and §5: a status of the refusal
// table, never a server error, and bodies that are JSON-RPC as the table
// says.
package fuzzhttp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/streamable"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/transcript"
)

// Request parses data as an HTTP/1.1 request (line, headers, body), the
// way net/http's server would; ok is false when the server would not have
// handed it to a handler. A body the headers declare but data lacks is cut
// short, as a client that went away would leave it.
func Request(data []byte) (*http.Request, bool) {
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data)))
	if err != nil || r.ProtoMajor != 1 {
		return nil, false
	}
	return r, true
}

// Statuses are every status the hosts may answer (docs/SPEC.md §4, §5.2,
// §5.3); 500 is not among them.
var Statuses = map[int]bool{
	200: true, 202: true, 400: true, 401: true, 403: true, 404: true, 405: true,
	406: true, 408: true, 413: true, 415: true, 429: true, 431: true, 503: true,
}

// Serve runs h on r with a recorder and returns it.
func Serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// Check returns what is wrong with an answer: a status outside Statuses; a
// JSON body that is not one JSON-RPC message or batch answer; an event
// stream whose data is not; a body on a status that must be empty.
func Check(rec *httptest.ResponseRecorder) error { return check(rec, false) }

// CheckWithHints is Check for the loopback host, whose 401 and 403 carry
// one line of text saying what to do (docs/SPEC.md §5.2): "agentmcp:
// refused (…): …".
func CheckWithHints(rec *httptest.ResponseRecorder) error { return check(rec, true) }

func check(rec *httptest.ResponseRecorder, hints bool) error {
	status := rec.Code
	body := rec.Body.Bytes()
	if !Statuses[status] {
		return fmt.Errorf("status %d is not one the hosts answer", status)
	}
	ct := rec.Header().Get("Content-Type")
	switch {
	case hints && (status == 401 || status == 403) && ct == "text/plain; charset=utf-8":
		if !bytes.HasPrefix(body, []byte("agentmcp: refused (")) || bytes.Count(body, []byte("\n")) != 1 || !bytes.HasSuffix(body, []byte("\n")) {
			return fmt.Errorf("status %d: the hint is not one line: %q", status, trim(body))
		}
		return nil
	case len(body) == 0:
		if status == 200 {
			return errors.New("200 with an empty body")
		}
		return nil
	case ct == "application/json":
		if err := transcript.CheckServerFrame(bytes.TrimSpace(body)); err != nil {
			return fmt.Errorf("status %d: body is not a JSON-RPC answer (%v): %q", status, err, trim(body))
		}
	case ct == "text/event-stream":
		if status != 200 {
			return fmt.Errorf("event stream with status %d", status)
		}
		for line := range strings.SplitSeq(string(body), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				if err := transcript.CheckServerFrame([]byte(data)); err != nil {
					return fmt.Errorf("event data is not a JSON-RPC message (%v): %q", err, trim([]byte(data)))
				}
			}
		}
	default:
		return fmt.Errorf("status %d with a %q body: %q", status, ct, trim(body))
	}
	if status == 202 || status == 401 || status == 403 || status == 405 || status == 413 || status == 429 || status == 503 {
		return fmt.Errorf("status %d must have an empty body: %q", status, trim(body))
	}
	return nil
}

func trim(b []byte) []byte {
	if len(b) > 300 {
		return b[:300]
	}
	return b
}

// Framing is the Streamable HTTP framing over an engine serving s with
// asking on, as both hosts compose it behind their admission; the engine
// is shut down when the fuzz test ends.
func Framing(f *testing.F, s ports.Session) *streamable.Handler {
	f.Helper()
	eng, err := engine.New(s, engine.Options{AskClient: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = eng.Shutdown(context.Background()) })
	framing, err := streamable.NewHandler(eng, streamable.Options{})
	if err != nil {
		f.Fatal(err)
	}
	return framing
}
