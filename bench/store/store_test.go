// Package store benchmarks the agent's conversation stores (docs/SPEC.md §9):
// the SQLite file beside the in-memory store. It is a package of its own
// so that the bench table's in-process rows ("go test -bench ." in bench/)
// do not run it: cd bench && go test -run '^$' -bench Store ./store/
package store

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/agent"
	"github.com/agentmcp/agentmcp/adapters/memstore"
	"github.com/agentmcp/agentmcp/adapters/sqlite"
	"github.com/agentmcp/agentmcp/ports"
)

// storeTurn is a typical finished turn: a prompt, one tool call and its
// result, and the answer (about 2 KiB).
func storeTurn(i int) ports.Turn {
	msgs := []ports.Message{
		{Role: ports.RoleUser, Content: fmt.Sprintf("prompt %d: read main.go and tell me what it does", i)},
		{Role: ports.RoleAssistant, ToolCalls: []ports.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"main.go"}`}}},
		{Role: ports.RoleTool, ToolCallID: "call_1", Content: strings.Repeat("package main // a line of the file\n", 40)},
		{Role: ports.RoleAssistant, Content: strings.Repeat("It starts the server and waits. ", 20)},
	}
	n := 0
	for _, m := range msgs {
		n += len(m.Content) + len(m.Role) + len(m.ToolCallID)
	}
	return ports.Turn{Messages: msgs, Bytes: n}
}

// BenchmarkStoreCommit is the agent's commit of a finished turn (Append:
// the turn, the history budget, the store's bounds, in one transaction),
// over 100 conversations, for the SQLite file (WAL, synchronous=FULL: one
// fsync per commit) and the in-memory store. It reports the latency's
// p50 and p99.
func BenchmarkStoreCommit(b *testing.B) {
	for _, kind := range []string{"sqlite", "memory"} {
		b.Run(kind, func(b *testing.B) {
			store := openBenchStore(b, kind, filepath.Join(b.TempDir(), sqlite.FileName))
			turn := storeTurn(0)
			var lat []time.Duration
			i := 0
			for b.Loop() {
				ref := ports.RefOf(fmt.Sprintf("/work/p%d", i%100), ports.Principal{})
				start := time.Now()
				if err := store.Append(b.Context(), ref, turn, agent.DefaultHistoryBytes); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				i++
			}
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkStoreStartup is a server's start-up with a store of 10⁴
// conversations: Open (migration check, the one write that proves the
// file writable, the age limit) and the first turn's Load. The in-memory
// store starts empty; its row is the floor.
func BenchmarkStoreStartup(b *testing.B) {
	const conversations = 10_000
	for _, kind := range []string{"sqlite", "memory"} {
		b.Run(kind, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), sqlite.FileName)
			if kind == "sqlite" {
				fillStore(b, path, conversations)
			}
			ref := ports.RefOf("/work/p42", ports.Principal{})
			var lat []time.Duration
			for b.Loop() {
				start := time.Now()
				store := openBenchStore(b, kind, path)
				turns, err := store.Load(b.Context(), ref)
				lat = append(lat, time.Since(start))
				if err != nil || (kind == "sqlite" && len(turns) != 1) {
					b.Fatalf("Load: %d turns, %v", len(turns), err)
				}
				if c, ok := store.(*sqlite.Store); ok {
					c.Close()
				}
			}
			reportPercentiles(b, lat)
		})
	}
}

// fillStore writes n conversations of one turn each.
func fillStore(b *testing.B, path string, n int) {
	s, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	turn := storeTurn(0)
	for i := range n {
		if err := s.Append(b.Context(), ports.RefOf(fmt.Sprintf("/work/p%d", i), ports.Principal{}), turn, agent.DefaultHistoryBytes); err != nil {
			b.Fatal(err)
		}
	}
}

func openBenchStore(b *testing.B, kind, path string) ports.ConversationStore {
	if kind == "memory" {
		return memstore.New(memstore.Options{MaxConversations: 1000, MaxBytes: 256 << 20, MaxAge: 90 * 24 * time.Hour})
	}
	s, err := sqlite.Open(path, sqlite.Options{MaxConversations: 100_000, MaxBytes: 1 << 30, MaxAge: 90 * 24 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}
