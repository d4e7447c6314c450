package app_test

// These examples use only the module's exported packages, so they can be
// copied into a program of your own (go get github.com/agentmcp/agentmcp).
// notes, below, stands for your agent session: any ports.Session.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/adapters/httploopback"
	"github.com/agentmcp/agentmcp/adapters/httpremote"
	"github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/adapters/streamable"
	"github.com/agentmcp/agentmcp/adapters/unixsocket"
	"github.com/agentmcp/agentmcp/app"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/ports"
)

// notes is a tiny agent session: one runtime tool, add_note, and a turn
// that answers from what it was told. A real session runs a model here.
type notes struct {
	mu   sync.Mutex
	list []string
}

func (n *notes) RuntimeTools(context.Context) ([]domain.Tool, error) {
	return []domain.Tool{{
		Name:        "add_note",
		Title:       "Add a note",
		Description: "Remember one line of text.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
		Annotations: &domain.ToolAnnotations{ReadOnlyHint: domain.Hint(false), DestructiveHint: domain.Hint(false), OpenWorldHint: domain.Hint(false)},
	}}, nil
}

func (n *notes) InvokeTool(ctx context.Context, name string, args json.RawMessage, caller ports.Caller) (domain.Envelope, error) {
	var a struct{ Text string }
	if err := json.Unmarshal(args, &a); err != nil || a.Text == "" {
		return domain.Envelope{Success: false, ToolName: name, Error: "text is required"}, nil
	}
	n.mu.Lock()
	n.list = append(n.list, a.Text)
	count := len(n.list)
	n.mu.Unlock()
	return domain.Envelope{Success: true, ToolName: name, Result: json.RawMessage(fmt.Sprintf(`{"count":%d}`, count))}, nil
}

func (n *notes) Submit(ctx context.Context, s ports.Submission, caller ports.Caller) (ports.TurnResult, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return ports.TurnResult{Response: fmt.Sprintf("I have %d notes. You said: %s", len(n.list), s.Prompt)}, nil
}

// The engine alone: one stateless exchange, as an HTTP framing of your own
// would hand it a request body.
func Example_engine() {
	eng, err := engine.New(&notes{}, engine.Options{Name: "notes", Version: "1.0.0"})
	if err != nil {
		panic(err)
	}
	defer eng.Shutdown(context.Background())

	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add_note","arguments":{"text":"buy milk"}}}`
	reply := eng.Exchange(context.Background(), []byte(body), engine.ExchangeOptions{})
	fmt.Println(reply.Kind == engine.Answered)
	fmt.Println(string(reply.Body))
	// Output:
	// true
	// {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"success\":true,\"toolName\":\"add_note\",\"result\":{\"count\":1}}"}],"isError":false}}
}

// The stdio carrier, over a pair of pipes as a host would use its own stdin
// and stdout (leave Stdin and Stdout nil for those).
func Example_stdio() {
	eng, err := engine.New(&notes{}, engine.Options{Name: "notes", Version: "1.0.0"})
	if err != nil {
		panic(err)
	}
	clientOut, serverIn := io.Pipe()
	serverOut, clientIn := io.Pipe()
	t, err := stdio.New(eng, stdio.Options{Stdin: clientOut, Stdout: clientIn})
	if err != nil {
		panic(err)
	}
	if err := t.Start(context.Background()); err != nil {
		panic(err)
	}

	answers := bufio.NewScanner(serverOut)
	fmt.Fprintln(serverIn, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}`)
	answers.Scan()
	fmt.Println(answers.Text())
	fmt.Fprintln(serverIn, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"hello"}}}`)
	answers.Scan()
	fmt.Println(answers.Text())

	serverIn.Close() // the client closes stdin: the carrier ends cleanly
	// Run waits for the carrier to end (here it has: the end of input),
	// stops it and shuts the engine down; a host passes its signal context.
	fmt.Println("run:", eng.Run(context.Background(), t))
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"notes","version":"1.0.0"}}}
	// {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"I have 0 notes. You said: hello"}]}}
	// run: <nil>
}

// The loopback Streamable HTTP host: 127.0.0.1 only, a bearer token minted
// per start.
func Example_loopbackHTTP() {
	eng, err := engine.New(&notes{}, engine.Options{Name: "notes", Version: "1.0.0"})
	if err != nil {
		panic(err)
	}
	host, err := httploopback.New(eng, httploopback.Options{}) // Port 0: a free port
	if err != nil {
		panic(err)
	}
	if err := host.Start(context.Background()); err != nil {
		panic(err)
	}
	ep := host.Endpoint() // the URL and the token, once started
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = host.Stop(ctx)
		_ = eng.Shutdown(ctx)
	}()

	req, _ := http.NewRequest("POST", ep.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add_note","arguments":{"text":"ship it"}}}`))
	req.Header.Set("Authorization", "Bearer "+ep.Token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(b))
	// Output:
	// 200 {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"success\":true,\"toolName\":\"add_note\",\"result\":{\"count\":1}}"}],"isError":false}}
}

// The Unix-socket carrier: a socket file of mode 0600 that only processes
// of this user may connect to; each connection is one MCP stream framed as
// stdio, with its own initialize.
func Example_unixSocket() {
	eng, err := engine.New(&notes{}, engine.Options{Name: "notes", Version: "1.0.0"})
	if err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "notes")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	srv, err := unixsocket.New(eng, unixsocket.Options{Path: filepath.Join(dir, "notes.sock")})
	if err != nil {
		panic(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		panic(err)
	}

	conn, err := net.Dial("unix", srv.Path())
	if err != nil {
		panic(err)
	}
	answers := bufio.NewScanner(conn)
	fmt.Fprintln(conn, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}`)
	answers.Scan()
	fmt.Println(answers.Text())
	fmt.Fprintln(conn, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add_note","arguments":{"text":"water the plants"}}}`)
	answers.Scan()
	fmt.Println(answers.Text())
	conn.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println("stop:", srv.Stop(ctx)) // removes the socket file
	fmt.Println("shutdown:", eng.Shutdown(ctx))
	_, err = os.Stat(srv.Path())
	fmt.Println("socket file gone:", os.IsNotExist(err))
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"notes","version":"1.0.0"}}}
	// {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"{\"success\":true,\"toolName\":\"add_note\",\"result\":{\"count\":1}}"}],"isError":false}}
	// stop: <nil>
	// shutdown: <nil>
	// socket file gone: true
}

// The MCP endpoint mounted at /mcp in a host's own http.ServeMux, next to
// its other routes, behind the host's own authentication. The handler
// serves a principal the host names (here, from its API key), so each
// user's input-required rounds and conversation stay theirs.
func Example_serveMux() {
	eng, err := engine.New(&notes{}, engine.Options{Name: "notes", Version: "1.0.0"})
	if err != nil {
		panic(err)
	}
	defer eng.Shutdown(context.Background())
	mcp, err := streamable.NewHandler(eng, streamable.Options{})
	if err != nil {
		panic(err)
	}
	users := map[string]string{"key-alice": "alice"} // the host's own credentials

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		user, ok := users[r.Header.Get("X-Api-Key")]
		if !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcp.ServeMCP(w, r, ports.Principal{Issuer: "my-host", Subject: user})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	call := func(key string) {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"hi"}}}`))
		req.Header.Set("X-Api-Key", key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, strings.TrimSpace(string(b)))
	}
	call("key-alice")
	call("wrong")
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	// Output:
	// 200 {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"I have 0 notes. You said: hi"}]}}
	// 401 unauthorized
	// 200
}

// The remote host and its access-token verifier, built from one set of
// values; Start would then bind 127.0.0.1:8080 behind a TLS-terminating
// proxy at 127.0.0.1 (see the deployment recipe in docs/remote.md).
func ExampleNewRemote() {
	eng, err := engine.New(&notes{}, engine.Options{Name: "notes", Version: "1.0.0"})
	if err != nil {
		panic(err)
	}
	host, err := app.NewRemote(eng, httpremote.Options{
		Host: "127.0.0.1", Port: 8080,
		Authorization: httpremote.Authorization{TrustedProxies: []string{"127.0.0.1"}},
	}, app.RemoteAccess{
		PublicURL:       "https://mcp.example.com/team/agent/mcp",
		Issuer:          "https://auth.example.com",
		Scopes:          []string{"mcp:tools"},
		AllowedSubjects: []string{"248289761001"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(host)
	// Output: httpremote.Host(https://mcp.example.com/team/agent/mcp)
}
