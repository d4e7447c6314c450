package store

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/postgres"
	"github.com/agentmcp/agentmcp/bench/internal/servers"
	"github.com/agentmcp/agentmcp/internal/pgtest"
	"github.com/agentmcp/agentmcp/ports"
)

// Tasks across replicas (docs/SPEC.md §14 "Replicas"): tasks/get of a
// completed task and a plain tools/call through Engine.Exchange (the HTTP
// hosts' entry point, without the HTTP), on an engine in memory (the
// default) and on engines sharing one PostgreSQL store (internal/pgtest's
// cluster). Run: cd bench && go test -run '^$' -bench 'TasksGet|PlainCall' -benchtime 2000x ./store/

var benchPrincipal = ports.Principal{Issuer: "https://issuer.bench.test", Subject: "alice", Client: "bench"}

const tasksCaps = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`

func exchange(b *testing.B, x *servers.Exchanger, id int, method, caps, params, name string) []byte {
	r, err := x.Exchange(context.Background(), benchPrincipal, id, method, caps, params, name)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// benchEngine is an engine over the scripted session, its tasks and
// rounds in calls (nil: in memory).
func benchEngine(b *testing.B, calls ports.CallStore) *servers.Exchanger {
	x, err := servers.NewExchanger(calls)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		x.Shutdown(ctx)
	})
	return x
}

// replicaStores are two stores (two replicas) on one new database.
func replicaStores(b *testing.B) (*postgres.Store, *postgres.Store) {
	c := pgtest.Start(b)
	db := c.CreateDatabase(b)
	open := func() *postgres.Store {
		s, err := postgres.Open(b.Context(), c.URL(db), postgres.Options{Password: c.Password, Scope: "/bench"})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}
	return open(), open()
}

// completedTask creates a task on e and waits (polling reader, as a
// client does) until reader reads it completed; it returns its id.
func completedTask(b *testing.B, e, reader *servers.Exchanger) string {
	r := exchange(b, e, 1, "tools/call", tasksCaps, `"name":"agent_submit","arguments":{"prompt":"hello"}`, "agent_submit")
	i := bytes.Index(r, []byte(`"taskId":"`))
	if i < 0 {
		b.Fatalf("no task: %s", r)
	}
	id := string(r[i+10 : i+10+43])
	for n := 0; !bytes.Contains(exchange(b, reader, 2, "tasks/get", tasksCaps, `"taskId":"`+id+`"`, id), []byte(`"status":"completed"`)); n++ {
		if n > 10_000 {
			b.Fatal("the task never read completed")
		}
		time.Sleep(time.Millisecond)
	}
	return id
}

// BenchmarkTasksGet is tasks/get of a completed agent_submit task: on one
// engine in memory (the default); with a shared store, on the replica
// that ran it and on another. It reports p50 and p99 in milliseconds.
func BenchmarkTasksGet(b *testing.B) {
	for _, kind := range []string{"memory", "postgres-same-replica", "postgres-other-replica"} {
		b.Run(kind, func(b *testing.B) {
			var writer, reader *servers.Exchanger
			if kind == "memory" {
				writer = benchEngine(b, nil)
				reader = writer
			} else {
				sa, sb := replicaStores(b)
				writer, reader = benchEngine(b, sa), benchEngine(b, sb)
				if kind == "postgres-same-replica" {
					reader = writer
				}
			}
			id := completedTask(b, writer, reader)
			var lat []time.Duration
			n := 10
			for b.Loop() {
				n++
				start := time.Now()
				r := exchange(b, reader, n, "tasks/get", tasksCaps, `"taskId":"`+id+`"`, id)
				lat = append(lat, time.Since(start))
				if !bytes.Contains(r, []byte(`"status":"completed"`)) {
					b.Fatalf("tasks/get: %s", r)
				}
			}
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkPlainCallSharedStore is a plain tools/call (echo) on an engine
// in memory and on one with a shared PostgreSQL store, interleaved in one
// loop so both see the same machine: a plain call never reaches the
// store, so shared/memory is 1 within the noise. It reports each one's
// p50 in microseconds and their ratio (the p50s': a mean follows the odd
// garbage collection).
func BenchmarkPlainCallSharedStore(b *testing.B) {
	sa, _ := replicaStores(b)
	mem, shared := benchEngine(b, nil), benchEngine(b, sa)
	var lm, ls []time.Duration
	n := 0
	for b.Loop() {
		n++
		engines := [2]*servers.Exchanger{mem, shared}
		if n%2 == 0 {
			engines = [2]*servers.Exchanger{shared, mem}
		}
		for _, e := range engines {
			start := time.Now()
			r := exchange(b, e, n, "tools/call", `{}`, `"name":"echo","arguments":{"text":"x"}`, "echo")
			d := time.Since(start)
			if !bytes.Contains(r, []byte(`"isError":false`)) {
				b.Fatalf("echo: %s", r)
			}
			if e == mem {
				lm = append(lm, d)
			} else {
				ls = append(ls, d)
			}
		}
	}
	at50 := func(lat []time.Duration) float64 {
		sortDurations(lat)
		return float64(lat[len(lat)/2].Nanoseconds()) / 1000
	}
	m, sh := at50(lm), at50(ls)
	b.ReportMetric(m, "memory-p50-µs")
	b.ReportMetric(sh, "shared-p50-µs")
	b.ReportMetric(sh/m, "shared/memory")
}
