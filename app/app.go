// Package app is agentmcp's composition root: the public factories a custom
// host calls, and the command line (app/cmd/agentmcp). It is the only
// package that wires adapters together.
//
// The engine is built once (engine.New) and handed to every carrier:
// stdio.New(eng, …), httploopback.New(eng, …), httpremote.New(eng, …) or
// [NewRemote], unixsocket.New(eng, …), or a streamable.Handler mounted in
// the host's own mux. Every carrier has the one lifecycle of
// engine.Carrier (docs/SPEC.md §5): Start, then Wait or Stop. Once the
// carriers have stopped, the engine's Shutdown ends what is left (calls
// parked in input-required rounds); engine.Engine.Run serves on started
// carriers and does both, in that order.
package app
