// Package load drives the carriers with many concurrent clients for the
// load tests (docs/SPEC.md §8: nothing a client sends blocks the others
// or grows memory without bound) and measures what they saw: every answer
// checked, latencies, goroutines and heap before and after.
package load

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Outcome is what one request got.
type Outcome int

const (
	// OK: the right answer.
	OK Outcome = iota
	// Refused: a valid request was refused (503, 429, "server is busy").
	Refused
	// Wrong: any other answer, or none.
	Wrong
)

// Call sends request seq (0-based, over all clients) as client and judges
// the answer; detail says what was wrong.
type Call func(ctx context.Context, client, seq int) (o Outcome, detail string)

// Result is what a run saw.
type Result struct {
	Requests, Refused, Wrong int
	Elapsed                  time.Duration
	P50, P99, Max            time.Duration
	// Details holds the first few wrong or refused answers.
	Details []string
}

func (r Result) String() string {
	return fmt.Sprintf("%d requests in %v (%.0f/s), p50 %v, p99 %v, max %v; %d refused, %d wrong",
		r.Requests, r.Elapsed.Round(time.Millisecond), float64(r.Requests)/r.Elapsed.Seconds(),
		r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.Max.Round(time.Microsecond), r.Refused, r.Wrong)
}

// Run sends total requests from clients goroutines, each taking the next
// sequence number until total are sent, and times each.
func Run(ctx context.Context, clients, total int, call Call) Result {
	lat := make([]time.Duration, total)
	outcomes := make([]Outcome, total)
	var next atomic.Int64
	var mu sync.Mutex
	var details []string
	begin := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for {
				seq := int(next.Add(1) - 1)
				if seq >= total || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				o, detail := call(ctx, c, seq)
				lat[seq], outcomes[seq] = time.Since(t0), o
				if o != OK {
					mu.Lock()
					if len(details) < 10 {
						details = append(details, fmt.Sprintf("request %d: %s", seq, detail))
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	r := Result{Elapsed: time.Since(begin), Details: details}
	var done []time.Duration
	for i, o := range outcomes {
		if lat[i] == 0 {
			continue // not sent (ctx ended)
		}
		r.Requests++
		switch o {
		case Refused:
			r.Refused++
		case Wrong:
			r.Wrong++
		}
		done = append(done, lat[i])
	}
	slices.Sort(done)
	if n := len(done); n > 0 {
		r.P50, r.P99, r.Max = done[n/2], done[min(n-1, n*99/100)], done[n-1]
	}
	return r
}

// Memory is a snapshot of the process: goroutines, live heap after a
// collection, and resident set (Linux; 0 elsewhere).
type Memory struct {
	Goroutines int
	HeapAlloc  uint64
	RSS        uint64
}

func (m Memory) String() string {
	return fmt.Sprintf("%d goroutines, heap %.1f MiB, RSS %.1f MiB", m.Goroutines, mib(m.HeapAlloc), mib(m.RSS))
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// Measure collects garbage twice and reads the snapshot.
func Measure() Memory {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Memory{Goroutines: runtime.NumGoroutine(), HeapAlloc: ms.HeapAlloc, RSS: rss()}
}

func rss() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			var kb uint64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb << 10
		}
	}
	return 0
}

// HeapWithin reports whether after's live heap is within frac of
// before's, with slack bytes allowed on top (a small heap's 10 % is
// smaller than what a test itself keeps).
func HeapWithin(before, after Memory, frac float64, slack uint64) bool {
	return float64(after.HeapAlloc) <= float64(before.HeapAlloc)*(1+frac)+float64(slack)
}

// Requests is a load test's size: full, or underRace when the race
// detector is on; the environment variable AGENTMCP_LOAD_REQUESTS, when
// set to a positive number, overrides both (for a quick run, or a longer
// one).
func Requests(full, underRace int) int {
	if v, err := strconv.Atoi(os.Getenv("AGENTMCP_LOAD_REQUESTS")); err == nil && v > 0 {
		return v
	}
	if Race {
		return underRace
	}
	return full
}

// Settle measures until the live heap is within frac of before's (plus
// slack bytes) or timeout passes, and returns the last measurement and
// whether it was within. It polls: work a run left behind (an answer still
// being written to a client that stopped reading, a call still being
// cancelled) ends within a bounded time, but with no event to wait for.
func Settle(before Memory, frac float64, slack uint64, timeout time.Duration) (Memory, bool) {
	deadline := time.Now().Add(timeout)
	for {
		m := Measure()
		if HeapWithin(before, m, frac, slack) {
			return m, true
		}
		if time.Now().After(deadline) {
			return m, false
		}
		time.Sleep(20 * time.Millisecond) // polling, bounded by the deadline
	}
}

// Steady measures until two measurements 50 ms apart agree within 1 % (or
// 16 KiB), or timeout passes, and returns the last: the heap once what a
// run left behind has been collected.
func Steady(timeout time.Duration) Memory {
	deadline := time.Now().Add(timeout)
	prev := Measure()
	for {
		time.Sleep(50 * time.Millisecond) // polling, bounded by the deadline
		m := Measure()
		d := int64(m.HeapAlloc) - int64(prev.HeapAlloc)
		if d < 0 {
			d = -d
		}
		if d <= max(int64(prev.HeapAlloc)/100, 16<<10) || time.Now().After(deadline) {
			return m
		}
		prev = m
	}
}
