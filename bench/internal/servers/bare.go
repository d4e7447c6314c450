package servers

import (
	"bufio"
	"context"
	"io"
	"net/http"

	"github.com/agentmcp/agentmcp/bench/internal/wire"
)

// The bare servers are no MCP servers: each copies the request's id into a
// canned tools/call answer (wire.AppendBareAnswer). They price the harness
// itself (client, loopback TCP or pipes, net/http, the answer check) and are
// the floor every MCP server is compared with.

// bareHTTP is a plain net/http JSON handler: it reads the body, copies the
// id and writes the canned answer as application/json.
func bareHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id, ok := wire.RawID(body)
	if !ok {
		http.Error(w, "no id", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(wire.AppendBareAnswer(make([]byte, 0, 128), id))
}

// serveBareStdio answers every line that carries an id with the canned
// answer, one write per answer, and skips notifications.
func serveBareStdio(in io.ReadCloser, out io.WriteCloser) *Stdio {
	s := runStdio(func() error {
		buf := make([]byte, 0, 256)
		rd := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := rd.ReadSlice('\n')
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			id, ok := wire.RawID(line)
			if !ok {
				continue // a notification
			}
			buf = append(wire.AppendBareAnswer(buf[:0], id), '\n')
			if _, err := out.Write(buf); err != nil {
				return err
			}
		}
	})
	s.stop = func(context.Context) error { in.Close(); <-s.done; return nil }
	return s
}
