// Package leakcheck fails a test whose goroutines outlive it: it records the
// goroutines running when a test starts and, when the test's cleanups have
// run (a carrier's Stop, the engine's Shutdown), waits a bounded time for
// every goroutine started since to end (docs/SPEC.md §8: no goroutine
// outlives Stop/Wait).
//
// It compares goroutine ids, not counts, so a goroutine that ended and
// another that started do not cancel out, and a failure names the
// goroutines left with their stacks. It must not be used in a test whose
// goroutines overlap another test's (t.Parallel): they would be counted.
package leakcheck

import (
	"bytes"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Timeout bounds the wait for goroutines to end after a test.
const Timeout = 5 * time.Second

// ignored are goroutines no carrier owns: an HTTP client's keep-alive pool
// (the test's own client side, which closes with its Transport) and
// process-wide helpers the standard library starts once and keeps.
var ignored = []string{
	"net/http.(*persistConn).readLoop",
	"net/http.(*persistConn).writeLoop",
	"os/signal.signal_recv",
	"os/signal.loop",
	"testing.(*T).Run",
	"testing.runFuzzing",
	"testing.(*F).Fuzz",
	"runtime.ReadTrace",
}

// Base is the set of goroutines running at one moment.
type Base struct {
	ids map[uint64]bool
}

// Snapshot records the goroutines running now.
func Snapshot() Base {
	b := Base{ids: make(map[uint64]bool)}
	for _, g := range goroutines() {
		b.ids[g.id] = true
	}
	return b
}

// Check records the goroutines running now and registers a cleanup that
// fails t unless every goroutine started after this call has ended within
// Timeout. Call it first in a test, before anything registers a cleanup
// of its own: cleanups run last-registered first, so this one runs after
// every Stop and Shutdown the test registered.
func Check(t testing.TB) {
	t.Helper()
	b := Snapshot()
	t.Cleanup(func() { b.Verify(t) })
}

// Verify fails t unless every goroutine started since b was taken has
// ended within Timeout. It polls (the runtime offers no event for a
// goroutine's end): the wait is bounded, and it returns as soon as the
// count is back.
func (b Base) Verify(t testing.TB) {
	t.Helper()
	if left := b.Wait(Timeout); len(left) > 0 {
		t.Errorf("leakcheck: %d goroutine(s) outlived the test:\n\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

// Wait waits up to timeout for every goroutine started since b was taken
// to end, and returns the stacks of those still running then.
func (b Base) Wait(timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	pause := 100 * time.Microsecond
	for {
		left := b.extra()
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		runtime.Gosched()
		time.Sleep(pause) // polling, bounded by the deadline; not synchronisation
		pause = min(2*pause, 20*time.Millisecond)
	}
}

func (b Base) extra() []string {
	var left []string
	for _, g := range goroutines() {
		if b.ids[g.id] || g.ignored() {
			continue
		}
		left = append(left, g.stack)
	}
	return left
}

type goroutine struct {
	id    uint64
	stack string
}

func (g goroutine) ignored() bool {
	return slices.ContainsFunc(ignored, func(fn string) bool { return strings.Contains(g.stack, fn) })
}

// goroutines returns every goroutine but the caller's.
func goroutines() []goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []goroutine
	for i, rec := range bytes.Split(buf, []byte("\n\n")) {
		if i == 0 {
			continue // this goroutine
		}
		head, _, _ := bytes.Cut(rec, []byte("\n"))
		f := strings.Fields(string(head)) // "goroutine 12 [chan receive]:"
		if len(f) < 2 || f[0] != "goroutine" {
			continue
		}
		id, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, goroutine{id: id, stack: string(rec)})
	}
	return out
}
