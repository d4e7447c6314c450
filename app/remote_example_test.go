package app_test

import (
	"fmt"

	"github.com/agentmcp/agentmcp/adapters/httpremote"
	"github.com/agentmcp/agentmcp/app"
	"github.com/agentmcp/agentmcp/internal/fake"
)

// ExampleNewRemote builds the remote host and its access-token verifier
// from one set of values; Start would then bind 127.0.0.1:8080 behind a
// TLS-terminating proxy at 127.0.0.1 (see the deployment recipe in README.md).
func ExampleNewRemote() {
	session := fake.New() // your ports.Session
	host, err := app.NewRemote(session, httpremote.Options{
		Name: "my-agent", Version: "1.0.0",
		Host: "127.0.0.1", Port: 8080,
		Authorization: httpremote.Authorization{
			PublicURL:      "https://mcp.example.com/team/agent/mcp",
			Issuer:         "https://auth.example.com",
			Scopes:         []string{"mcp:tools"},
			TrustedProxies: []string{"127.0.0.1"},
		},
	}, app.RemoteAccess{AllowedSubjects: []string{"248289761001"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(host)
	// Output: httpremote.Host(https://mcp.example.com/team/agent/mcp)
}
