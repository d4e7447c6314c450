package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/bench/internal/wire"
)

// caller makes one tools/call echo with the given id and returns the text
// block of its checked answer (see callText).
type caller func(id int64) (string, error)

// ---------------------------------------------------------------- stdio

// stdioClient talks newline-delimited JSON-RPC to a server over two
// io.Pipes, one request at a time.
type stdioClient struct {
	w    io.WriteCloser // the server's stdin
	r    *bufio.Reader  // the server's stdout
	line []byte
}

// openStdio starts the named server on a fresh pipe pair, runs the
// initialize handshake (2025-11-25) and returns the client and a function
// that ends it all.
func openStdio(tb testing.TB, name string) (*stdioClient, func()) {
	inR, inW := io.Pipe()   // client → server
	outR, outW := io.Pipe() // server → client
	stop := serveStdio(tb, name, inR, outW)
	c := &stdioClient{w: inW, r: bufio.NewReaderSize(outR, 64<<10), line: make([]byte, 0, 512)}
	closeAll := func() {
		inW.Close()
		drained := make(chan struct{})
		go func() { _, _ = io.Copy(io.Discard, c.r); close(drained) }()
		stop()
		outR.Close()
		<-drained
	}
	if err := c.handshake(); err != nil {
		closeAll()
		tb.Fatalf("%s: handshake: %v", name, err)
	}
	return c, closeAll
}

func (c *stdioClient) send(line string) error {
	c.line = append(append(c.line[:0], line...), '\n')
	_, err := c.w.Write(c.line)
	return err
}

// next returns the next line the server wrote (valid until the next read).
func (c *stdioClient) next() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	return line, nil
}

func (c *stdioClient) handshake() error {
	if err := c.send(wire.InitializeLine); err != nil {
		return err
	}
	for {
		line, err := c.next()
		if err != nil {
			return err
		}
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("undecodable: %v: %s", err, line)
		}
		if len(r.ID) == 0 {
			continue // a notification
		}
		if string(r.ID) != "1" || r.Error != nil || r.Result == nil {
			return fmt.Errorf("bad initialize answer: %s", line)
		}
		break
	}
	return c.send(wire.InitializedLine)
}

// call sends one tools/call and reads lines until its answer, skipping
// notifications.
func (c *stdioClient) call(id int64) (string, error) {
	c.line = append(wire.AppendCall(c.line[:0], id, false), '\n')
	if _, err := c.w.Write(c.line); err != nil {
		return "", err
	}
	for {
		line, err := c.next()
		if err != nil {
			return "", err
		}
		text, err := wire.CallText(line, id)
		if errors.Is(err, wire.ErrNotResponse) {
			continue
		}
		return text, err
	}
}

// ---------------------------------------------------------------- HTTP

// sharedTransport is the one keep-alive HTTP client transport every HTTP
// benchmark uses: no proxy, no compression, HTTP/1.1 to 127.0.0.1.
var sharedTransport = &http.Transport{
	Proxy:               nil,
	DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	MaxIdleConns:        64,
	MaxIdleConnsPerHost: 8,
	IdleConnTimeout:     90 * time.Second,
	DisableCompression:  true,
}

var sharedClient = &http.Client{Transport: sharedTransport, Timeout: 30 * time.Second}

// httpClient posts one tools/call per request to a stateless endpoint.
type httpClient struct {
	url    string
	hdr    http.Header
	modern bool
	body   []byte
	resp   bytes.Buffer
}

// newHTTPClient prepares requests on the given wire: 2025-11-25 (no
// initialize, the version header only) or 2026-07-28 (_meta in the body,
// the version header, Mcp-Method and Mcp-Name).
func newHTTPClient(url string, extra http.Header, modern bool) *httpClient {
	hdr := http.Header{
		"Content-Type": {"application/json"},
		"Accept":       {"application/json, text/event-stream"},
	}
	if modern {
		hdr.Set("MCP-Protocol-Version", wire.ProtoModern)
		hdr.Set("Mcp-Method", "tools/call")
		hdr.Set("Mcp-Name", "echo")
	} else {
		hdr.Set("MCP-Protocol-Version", wire.ProtoLegacy)
	}
	for k, v := range extra {
		hdr[k] = v
	}
	return &httpClient{url: url, hdr: hdr, modern: modern, body: make([]byte, 0, 512)}
}

func (c *httpClient) call(id int64) (string, error) {
	c.body = wire.AppendCall(c.body[:0], id, c.modern)
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(c.body))
	if err != nil {
		return "", err
	}
	req.Header = c.hdr // read-only: the transport does not change it
	resp, err := sharedClient.Do(req)
	if err != nil {
		return "", err
	}
	c.resp.Reset()
	_, err = c.resp.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return "", err
	}
	msg, err := wire.HTTPAnswer(resp.StatusCode, resp.Header.Get("Content-Type"), c.resp.Bytes())
	if err != nil {
		return "", err
	}
	text, err := wire.CallText(msg, id)
	if errors.Is(err, wire.ErrNotResponse) {
		return "", fmt.Errorf("no answer: %.200s", msg)
	}
	return text, err
}
