package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/app"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/internal/syncbuf"
)

// writingModel is a scripted model whose turn "write x.txt" asks to write
// x.txt and then reports the write's result; any other turn answers
// "served: <prompt>".
func writingModel(t *testing.T) *chatscript.Server {
	return chatscript.New(t, func(r *chatscript.Request) chatscript.Reply {
		if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
			return chatscript.Reply{Text: "the write: " + last.Content}
		}
		if r.LastUser() == "write x.txt" {
			return chatscript.Reply{Calls: []chatscript.Call{{ID: "w", Name: "write_file", Arguments: `{"path":"x.txt","content":"x"}`}}}
		}
		return chatscript.Reply{Text: "served: " + r.LastUser()}
	})
}

// mcpConn is one client of an "agentmcp serve <carrier>" run in this
// process: do sends one request and returns its answer (the next message
// carrying its id), for stdio, a Unix-socket connection or the loopback
// HTTP host alike.
type mcpConn struct {
	t      *testing.T
	stderr *syncbuf.Buffer
	// stream carriers
	w  io.Writer
	sc *bufio.Scanner
	// http
	url, token string
	// socket is the Unix socket's path.
	socket string
}

// serveOver starts "agentmcp serve <carrier> args…" (carrier "stdio",
// "unix" or "http") and returns a client of it; the command ends with the
// test.
func serveOver(t *testing.T, carrier string, args ...string) *mcpConn {
	t.Helper()
	return serveOverWith(t, carrier, app.MainOptions{}, args...)
}

// serveOverWith is serveOver with the command's MainOptions (an Observer).
func serveOverWith(t *testing.T, carrier string, opts app.MainOptions, args ...string) *mcpConn {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &syncbuf.Buffer{}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	switch carrier {
	case "unix":
		args = append([]string{"--socket", filepath.Join(shortTempDir(t), "s")}, args...)
	case "http":
		args = append([]string{"--token-file", filepath.Join(t.TempDir(), "token")}, args...)
	}
	code := make(chan int, 1)
	go func() {
		code <- app.MainWith(ctx, append([]string{"serve", carrier}, args...), inR, outW, stderr, opts)
		outW.Close()
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		go io.Copy(io.Discard, outR)
		select {
		case <-code:
		case <-time.After(10 * time.Second):
			t.Errorf("serve %s did not end", carrier)
		}
	})
	c := &mcpConn{t: t, stderr: stderr}
	out := bufio.NewScanner(outR)
	out.Buffer(nil, 16<<20)
	if carrier == "stdio" {
		c.w, c.sc = inW, out
		return c
	}
	if !out.Scan() {
		t.Fatalf("serve %s printed nothing; stderr:\n%s", carrier, stderr)
	}
	first := out.Text()
	go io.Copy(io.Discard, outR)
	switch carrier {
	case "unix":
		conn, err := net.Dial("unix", first)
		if err != nil {
			t.Fatalf("dial %s: %v", first, err)
		}
		t.Cleanup(func() { conn.Close() })
		c.socket = first
		c.w, c.sc = conn, bufio.NewScanner(conn)
		c.sc.Buffer(nil, 16<<20)
	case "http":
		tok, err := os.ReadFile(args[1])
		if err != nil {
			t.Fatal(err)
		}
		c.url, c.token = first, strings.TrimSpace(string(tok))
	}
	return c
}

// redial connects anew to a Unix socket's server.
func (c *mcpConn) redial() {
	c.t.Helper()
	conn, err := net.Dial("unix", c.socket)
	if err != nil {
		c.t.Fatalf("dial %s: %v", c.socket, err)
	}
	c.t.Cleanup(func() { conn.Close() })
	c.w, c.sc = conn, bufio.NewScanner(conn)
	c.sc.Buffer(nil, 16<<20)
}

// shortTempDir is a temporary directory with a path short enough for a
// socket's sun_path.
func shortTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "amcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// do sends body, a request with id, and returns its answer decoded; name
// is the Mcp-Name a 2026-07-28 request carries over HTTP ("" for none).
func (c *mcpConn) do(body string, id int, method, name string) map[string]any {
	c.t.Helper()
	var line []byte
	if c.url != "" {
		req, _ := http.NewRequest("POST", c.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			c.t.Fatal(err)
		}
		line, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if i := strings.LastIndex(string(line), "data: "); strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && i >= 0 {
			line = []byte(strings.TrimSpace(string(line[i+len("data: "):])))
		}
	} else {
		if _, err := io.WriteString(c.w, body+"\n"); err != nil {
			c.t.Fatalf("write: %v; stderr:\n%s", err, c.stderr)
		}
		for {
			if !c.sc.Scan() {
				c.t.Fatalf("no answer to %s; stderr:\n%s", body, c.stderr)
			}
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(c.sc.Bytes(), &m) == nil && string(m.ID) == jsonInt(id) {
				line = c.sc.Bytes()
				break
			}
		}
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		c.t.Fatalf("answer %q: %v; stderr:\n%s", line, err, c.stderr)
	}
	return m
}

func jsonInt(i int) string { b, _ := json.Marshal(i); return string(b) }

// modernCall is a 2026-07-28 request with the given client capabilities.
func modernCall(id int, method, params, caps string) string {
	return `{"jsonrpc":"2.0","id":` + jsonInt(id) + `,"method":"` + method + `","params":{` + params +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
}
