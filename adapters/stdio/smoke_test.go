package stdio_test

import (
	"bufio"
	"context"
	"io"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/internal/fake"
)

func TestSmoke(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr, err := stdio.New(stdio.Options{Name: "t", Version: "1", Stdin: inR, Stdout: outW})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Attach(fake.New()); err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(outR)
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"fail"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"progress","arguments":{"n":2},"_meta":{"progressToken":"p"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"`,
		`42`,
	} {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		sc.Scan()
		t.Log(sc.Text())
	}
	for range 2 {
		sc.Scan()
		t.Log(sc.Text())
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
}
