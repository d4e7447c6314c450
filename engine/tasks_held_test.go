package engine_test

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/agentmcp/agentmcp/engine"
)

// TestHeldResultsBoundedInBytes: a finished task keeps its whole result
// for its TTL, so the results ended tasks keep are bounded in bytes, per
// principal and in all, the oldest ended first (docs/SPEC.md §14 "Lifetime
// and bounds"). With the defaults, 24 finished tasks of ~7 MB answers from
// one client stay within its 64 MiB: the oldest are forgotten (tasks/get:
// not found), the newest are read whole. Issue 30: a hostile pass held
// ~12.5 MB per task, ~3 GB at the 256-task bound.
func TestHeldResultsBoundedInBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := taskEngine(t, engine.Options{})
		c := &taskClient{t: t, e: e, who: alice}
		prompt := strings.Repeat("x", 7<<20)
		var ids []string
		for range 24 {
			ids = append(ids, c.submit(prompt))
			synctest.Wait() // it ends: the next one is not held back by the running bound
			if held := e.Stats().HeldResultBytes; held > engine.DefaultTaskResultBytesPerPrincipal {
				t.Fatalf("after %d tasks the ended ones keep %d bytes, beyond %d", len(ids), held, engine.DefaultTaskResultBytesPerPrincipal)
			}
		}
		kept := e.Stats().Tasks
		if kept == 0 || kept >= 24 || kept*(7<<20) > engine.DefaultTaskResultBytesPerPrincipal {
			t.Errorf("%d tasks kept, want the newest that fit in %d bytes", kept, engine.DefaultTaskResultBytesPerPrincipal)
		}
		if m := c.task("tasks/get", ids[0], ""); errorCode(m) != -32602 {
			t.Errorf("the oldest task: %v, want it forgotten (-32602)", m["result"] != nil)
		}
		g := c.get(ids[23])
		text, _ := g["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string)
		if g["status"] != "completed" || text != "echo: "+prompt {
			t.Errorf("the newest task: %v, %d bytes of text, want it completed and whole", g["status"], len(text))
		}
	})
}

// TestHeldResultsEngineBound: beyond the engine's bound the principal
// keeping the most bytes gives up its oldest ended task first; another
// principal's results, and the one just ended, stay.
func TestHeldResultsEngineBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := taskEngine(t, engine.Options{Tasks: engine.TaskOptions{PerPrincipalResultBytes: 10 << 20, MaxResultBytes: 16 << 20}})
		prompt := strings.Repeat("y", 3<<20)
		a := &taskClient{t: t, e: e, who: alice}
		b := &taskClient{t: t, e: e, who: bob}
		var as, bs []string
		for range 3 {
			as = append(as, a.submit(prompt))
			synctest.Wait()
		}
		bs = append(bs, b.submit(prompt))
		synctest.Wait()
		bs = append(bs, b.submit(prompt))
		synctest.Wait()
		// alice keeps 9 MiB and bob 6: 15 of 16. Bob's third makes 18: alice,
		// the bigger holder, gives up her oldest.
		bs = append(bs, b.submit(prompt))
		synctest.Wait()
		if held := e.Stats().HeldResultBytes; held > 16<<20 {
			t.Errorf("the ended tasks keep %d bytes, beyond the engine's 16 MiB", held)
		}
		if m := a.task("tasks/get", as[0], ""); errorCode(m) != -32602 {
			t.Errorf("alice's oldest: still kept, want it forgotten")
		}
		for _, id := range as[1:] {
			if g := a.get(id); g["status"] != "completed" {
				t.Errorf("alice's newer task: %v", g["status"])
			}
		}
		for _, id := range bs {
			if g := b.get(id); g["status"] != "completed" {
				t.Errorf("bob's task: %v", g["status"])
			}
		}
	})
}
