// Package app is agentmcp's composition root: the public factories a custom
// host calls, and the command line (app/cmd/agentmcp). It is the only
// package that wires adapters together.
//
// The engine is built once ([NewEngine], or engine.New) and handed to every
// carrier: stdio.New(eng, …), httploopback.New(eng, …), httpremote.New(eng,
// …) or [NewRemote], unixsocket.New(eng, …), or a streamable.Handler
// mounted in the host's own mux. After the carriers have stopped, the
// engine's Shutdown ends what is left (calls parked in input-required
// rounds).
package app

import (
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/ports"
)

// NewEngine returns the JSON-RPC + MCP engine serving session
// ([engine.New]): build it once, hand it to every carrier, and shut it down
// once they have stopped.
func NewEngine(session ports.Session, opts engine.Options) (*engine.Engine, error) {
	return engine.New(session, opts)
}
