// Package app is agentmcp's composition root: the public factories a custom
// host calls, and the command line (app/cmd/agentmcp). It is the only
// package that wires adapters together.
//
// A host that already has a ports.Session serves it over stdio with
// [NewStdio]; a host with a carrier of its own (a Unix socket, a WebSocket)
// takes the engine alone with [NewEngine] and feeds it frames.
package app

import (
	"github.com/agentmcp/agentmcp/adapters/engine"
	"github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/ports"
)

// NewStdio returns a stdio transport with session attached, ready for
// Start. opts.Stdin/Stdout default to the process's own streams.
func NewStdio(session ports.Session, opts stdio.Options) (*stdio.Transport, error) {
	t, err := stdio.New(opts)
	if err != nil {
		return nil, err
	}
	if err := t.Attach(session); err != nil {
		return nil, err
	}
	return t, nil
}

// NewEngine returns the JSON-RPC + MCP engine alone, for a carrier of the
// host's own: call [engine.Engine.Validate] before accepting clients, then
// [engine.Engine.NewStream] per connection or [engine.Engine.Exchange] per
// stateless request.
func NewEngine(session ports.Session, opts engine.Options) (*engine.Engine, error) {
	return engine.New(session, opts)
}
