// Command benchload is the bench's load generator for the separate-process
// rows of cmd/benchtable (which pins it to a CPU of its own with taskset).
// It checks every answer (the request's id, no error, exactly the expected
// text) and fails on the first wrong one, and prints one JSON line (Report)
// on stdout.
//
// Streamable HTTP, c clients on kept-alive connections, against a server
// that cmd/benchserver started and described (its stdout line, in a file):
//
//	benchload -info FILE -wire 2025-11-25|2026-07-28 [-c 12] [-warmup 1s] [-duration 5s]
//	          [-tokens fresh|cached] [-mem] [-warmup-count N -count N] [-workload NAME]
//
// stdio, pipelined with a window of requests in flight, against a server it
// starts itself:
//
//	benchload -stdio [-window 64] [-warmup 1s] [-duration 5s] [-label NAME] -- COMMAND [ARGS...]
//
// -tokens (agentmcp-remote only): fresh presents a different RS256 access
// token on every request, from a pool of distinct tokens more than twice the
// host's verdict cache, used in turn, so that every request is verified in
// full; cached presents one token throughout, verified once.
// -workload (agentmcp-workspace only) sends read_file or tasks-get instead
// of echo; tasks-get (2026-07-28) first creates a task and waits for it to
// complete, then reads it.
// -mem reads the server's heap in use (its -debug listener) after the
// warm-up and again after the measured phase.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentmcp/agentmcp/bench/internal/accesstoken"
	"github.com/agentmcp/agentmcp/bench/internal/load"
	"github.com/agentmcp/agentmcp/bench/internal/wire"
)

type options struct {
	info, wire, tokens, label string
	workload                  string
	stdio, mem                bool
	clients, window           int
	warmup, duration          time.Duration
	warmupCount, count        int64
	pool                      int
}

func main() {
	var o options
	flag.StringVar(&o.info, "info", "", "HTTP: the file holding benchserver's JSON line")
	flag.StringVar(&o.wire, "wire", wire.ProtoLegacy, "HTTP: the wire, "+wire.ProtoLegacy+" or "+wire.ProtoModern)
	flag.StringVar(&o.tokens, "tokens", "", "agentmcp-remote: fresh (a different token on every request) or cached (one token)")
	flag.IntVar(&o.pool, "pool", 0, "-tokens fresh: the pool's size instead of 2×cache+c (smaller pools hit the verdict cache: for smoke tests only)")
	flag.StringVar(&o.workload, "workload", wire.Echo.Name, "HTTP: the request sent, one of "+strings.Join(wire.Workloads, ", "))
	flag.BoolVar(&o.mem, "mem", false, "HTTP: read the server's heap after the warm-up and at the end (needs benchserver -debug)")
	flag.IntVar(&o.clients, "c", 12, "HTTP: concurrent clients, one kept-alive connection each")
	flag.BoolVar(&o.stdio, "stdio", false, "drive the stdio server started by the command after --")
	flag.IntVar(&o.window, "window", 64, "stdio: requests in flight")
	flag.StringVar(&o.label, "label", "", "stdio: the server's name in the report")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "warm-up duration (not measured)")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "measured duration")
	flag.Int64Var(&o.warmupCount, "warmup-count", 0, "warm-up calls instead of -warmup")
	flag.Int64Var(&o.count, "count", 0, "measured calls instead of -duration")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var (
		rep *load.Report
		err error
	)
	if o.stdio {
		rep, err = runStdio(ctx, o, flag.Args())
	} else {
		if flag.NArg() > 0 {
			err = fmt.Errorf("unexpected arguments %q", flag.Args())
		} else {
			rep, err = runHTTP(ctx, o)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchload: %v\n", err)
		os.Exit(1)
	}
	rep.LoadGOMAXPROCS = runtime.GOMAXPROCS(0)
	line, _ := json.Marshal(rep)
	fmt.Printf("%s\n", line)
}

func phases(o options) (warm, measured load.Phase) {
	warm, measured = load.Phase{Duration: o.warmup}, load.Phase{Duration: o.duration}
	if o.warmupCount > 0 {
		warm = load.Phase{Count: o.warmupCount}
	}
	if o.count > 0 {
		measured = load.Phase{Count: o.count}
	}
	return warm, measured
}

func runHTTP(ctx context.Context, o options) (*load.Report, error) {
	if o.info == "" {
		return nil, errors.New("-info is required (or -stdio)")
	}
	si, err := load.ReadServerInfo(o.info)
	if err != nil {
		return nil, err
	}
	if o.wire != wire.ProtoLegacy && o.wire != wire.ProtoModern {
		return nil, fmt.Errorf("-wire %q: want %s or %s", o.wire, wire.ProtoLegacy, wire.ProtoModern)
	}
	addr, path, err := load.ParseURL(si.URL)
	if err != nil {
		return nil, err
	}
	t := load.HTTPTarget{Addr: addr, Path: path, Host: si.Host, Modern: wire.Modern(o.wire)}
	for k, vs := range si.Header {
		for _, v := range vs {
			t.Header = append(t.Header, [2]string{k, v})
		}
	}
	rep := &load.Report{Mode: "http", Server: si.Server, Wire: o.wire, Clients: o.clients, ServerGOMAXPROCS: si.GOMAXPROCS}
	switch o.workload {
	case wire.Echo.Name:
	case wire.ReadFile.Name:
		t.Workload, rep.Workload = wire.ReadFile, o.workload
	case "tasks-get":
		id, err := load.CreateTask(t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", si.Server, err)
		}
		t.Workload, rep.Workload = wire.TasksGet(id), o.workload
	default:
		return nil, fmt.Errorf("-workload %q: want one of %s", o.workload, strings.Join(wire.Workloads, ", "))
	}
	if si.Remote != nil || o.tokens != "" {
		if si.Remote == nil {
			return nil, fmt.Errorf("-tokens: %s mints no tokens", si.Server)
		}
		start := time.Now()
		pool, err := mintPool(si.Remote, o.tokens, o.clients, o.pool)
		if err != nil {
			return nil, err
		}
		rep.Tokens, rep.MintSeconds = o.tokens, time.Since(start).Seconds()
		t.Tokens = pool
	}
	if o.mem && si.Debug == "" {
		return nil, errors.New("-mem: the server has no debug listener (benchserver -debug)")
	}

	h, err := load.DialHTTP(t, o.clients)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", si.Server, err)
	}
	defer h.Close()
	rep.Answer = h.Want()
	warm, measured := phases(o)
	rep.Warmup, rep.Phase = warm.String(), measured.String()
	if _, err := h.Run(ctx, warm, load.Watch{}); err != nil {
		return nil, fmt.Errorf("%s, warm-up: %w", si.Server, err)
	}
	if o.mem {
		hp, err := load.ReadHeap(ctx, si.Debug)
		if err != nil {
			return nil, err
		}
		rep.HeapAfterWarmup = &hp
	}
	if rep.Result, err = h.Run(ctx, measured, load.Watch{ServerPID: si.PID}); err != nil {
		return nil, fmt.Errorf("%s: %w", si.Server, err)
	}
	if o.mem {
		hp, err := load.ReadHeap(ctx, si.Debug)
		if err != nil {
			return nil, err
		}
		rep.HeapEnd = &hp
	}
	return rep, nil
}

// mintPool mints the tokens of a row: one (cached), or more than twice the
// host's verdict cache plus the clients (fresh). The cache drops the token
// used least recently first, and the pool is used in turn: between two uses
// of one token come at least CacheSize other tokens, so every request misses
// the cache and is verified in full, as a fresh token would be.
// size, when above zero, overrides the fresh pool's size.
func mintPool(r *load.RemoteInfo, mode string, clients, size int) (load.TokenPool, error) {
	var n int
	switch mode {
	case "cached":
		n = 1
	case "fresh":
		if r.CacheSize < 1 {
			return nil, errors.New("-tokens fresh: the server reports no verdict cache size")
		}
		n = 2*r.CacheSize + clients
		if size > 0 {
			n = size
		}
	default:
		return nil, fmt.Errorf("-tokens %q: want fresh or cached", mode)
	}
	pemKey, err := os.ReadFile(r.KeyFile)
	if err != nil {
		return nil, err
	}
	key, err := accesstoken.DecodeKey(pemKey)
	if err != nil {
		return nil, err
	}
	m, err := accesstoken.NewMinter(key, r.Claims)
	if err != nil {
		return nil, err
	}
	// Minting is RSA signing, about 2 ms a token: one goroutine per CPU.
	pool := make(load.TokenPool, n)
	workers := min(runtime.GOMAXPROCS(0), n)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n && errs[w] == nil; i += workers {
				pool[i], errs[w] = m.Mint(uint64(i))
			}
		}()
	}
	wg.Wait()
	return pool, errors.Join(errs...)
}

func runStdio(ctx context.Context, o options, argv []string) (*load.Report, error) {
	if len(argv) == 0 {
		return nil, errors.New("-stdio: the server's command follows --")
	}
	label := o.label
	if label == "" {
		label = strings.Join(argv, " ")
	}
	s, err := load.StartStdio(argv, o.window, os.Stderr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	rep := &load.Report{Mode: "stdio", Server: label, Wire: wire.ProtoLegacy, Window: o.window, Answer: s.Want()}
	warm, measured := phases(o)
	rep.Warmup, rep.Phase = warm.String(), measured.String()
	_, err = s.Run(ctx, warm, load.Watch{})
	if err == nil {
		rep.Result, err = s.Run(ctx, measured, load.Watch{ServerPID: s.Pid()})
	}
	if cerr := s.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing: %w", cerr)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	return rep, nil
}
