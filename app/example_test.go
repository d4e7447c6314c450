package app_test

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/app"
	"github.com/agentmcp/agentmcp/internal/fake"
)

// ExampleNewStdio serves a session over a pair of pipes, as a host would
// over its own stdin and stdout (leave Stdin and Stdout nil for those).
func ExampleNewStdio() {
	session := fake.New() // your ports.Session

	clientOut, serverIn := io.Pipe()
	serverOut, clientIn := io.Pipe()
	t, err := app.NewStdio(session, stdio.Options{
		Name: "my-agent", Version: "1.0.0",
		Stdin: clientOut, Stdout: clientIn,
	})
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
	fmt.Println("wait:", t.Wait())
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"my-agent","version":"1.0.0"}}}
	// {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"echo: hello"}]}}
	// wait: <nil>
}
