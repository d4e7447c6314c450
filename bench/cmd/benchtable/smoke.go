package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentmcp/agentmcp/bench/internal/load"
	"github.com/agentmcp/agentmcp/bench/internal/servers"
	"github.com/agentmcp/agentmcp/bench/internal/wire"
)

// Smoke mode's load: a few calls, no timing.
var smokePlan = plan{warmupCount: 5, count: 40}

const (
	smokeClients = 3
	smokeWindow  = 8
	smokePool    = "16" // distinct fresh tokens: enough to see each one admitted
	smokeMemWire = wire.ProtoModern
)

// smoke starts every server the bench knows in its own process (each HTTP
// server once, then both wires against it; the remote host with fresh and
// cached tokens; the loopback host's debug listener too) and every stdio
// server, and the workspace rows, and checks a few answers from each
// through benchload. binDir
// holds benchserver and benchload; empty means build them.
func smoke(ctx context.Context, benchDir, binDir string, log io.Writer) error {
	tmp, err := os.MkdirTemp("", "benchtable-smoke-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	r := &runner{tmp: tmp, stderr: log}
	if binDir == "" {
		r.serverBin, r.loadBin, err = build(ctx, benchDir, tmp)
		if err != nil {
			return err
		}
	} else {
		r.serverBin, r.loadBin = binDir+"/benchserver", binDir+"/benchload"
	}
	var errs []error
	check := func(rw row, rep *load.Report, err error) {
		if err == nil {
			err = checkReport(rw, rep)
		}
		if err == nil && rep.Result.Requests != smokePlan.count {
			err = fmt.Errorf("%d requests measured, want %d", rep.Result.Requests, smokePlan.count)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", rw.ID(), err))
			fmt.Fprintf(log, "FAIL %s: %v\n", rw.ID(), err)
			return
		}
		fmt.Fprintf(log, "ok   %s (%d calls)\n", rw.ID(), rep.Result.Requests)
	}
	for _, name := range servers.HTTPNames() {
		debug := name == servers.AgentmcpLoopback
		s, err := r.startServer(ctx, name, debug)
		if err != nil {
			errs = append(errs, err)
			fmt.Fprintf(log, "FAIL %s: %v\n", name, err)
			continue
		}
		tokens := []string{""}
		if name == servers.AgentmcpRemote {
			tokens = []string{"fresh", "cached"}
		}
		for _, w := range wire.Wires {
			for _, tok := range tokens {
				rw := row{Kind: kindHTTP, Wire: w, Server: name, Tokens: tok}
				args := append([]string{"-info", s.infoFile, "-wire", w, "-c", fmt.Sprint(smokeClients)}, smokePlan.args()...)
				if tok != "" {
					args = append(args, "-tokens", tok, "-pool", smokePool)
				}
				rep, err := r.runLoad(ctx, args...)
				check(rw, rep, err)
			}
		}
		if debug {
			rw := row{Kind: kindMem, Wire: smokeMemWire, Server: name}
			args := append([]string{"-info", s.infoFile, "-wire", smokeMemWire, "-c", fmt.Sprint(smokeClients), "-mem"}, smokePlan.args()...)
			rep, err := r.runLoad(ctx, args...)
			if err == nil && (rep.HeapEnd == nil || rep.HeapEnd.InUse == 0 || rep.HeapEnd.Goroutines == 0) {
				err = fmt.Errorf("implausible heap reading %+v", rep.HeapEnd)
			}
			check(rw, rep, err)
		}
		if err := s.stop(); err != nil {
			errs = append(errs, err)
			fmt.Fprintf(log, "FAIL stopping %s: %v\n", name, err)
		}
	}
	for _, rw := range workspaceRows() {
		rep, err := r.httpRow(ctx, rw, smokePlan, smokeClients)
		check(rw, rep, err)
	}
	for _, name := range servers.StdioNames() {
		rw := row{Kind: kindStdio, Wire: wire.ProtoLegacy, Server: name}
		rep, err := r.stdioRow(ctx, rw, smokePlan, smokeWindow)
		check(rw, rep, err)
	}
	return errors.Join(errs...)
}
