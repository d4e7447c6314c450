package engine

import (
	"context"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/ports"
)

// settledStore is a call store whose one task has already settled on
// replica A; only Task is called.
type settledStore struct {
	ports.CallStore
	rec ports.TaskRecord
}

func (s settledStore) Task(_ context.Context, id, _ string) (ports.TaskRecord, bool, error) {
	return s.rec, id == s.rec.ID, nil
}

// A legacy tasks/result on replica B read its task working on A, and A
// finished it (its Settled event reached B) before B began watching:
// settled reads the task again once it watches, instead of waiting for an
// event that has already passed (TestReplicasShareTasks hung there now
// and then: docs/SPEC.md §14 "Replicas").
func TestSharedSettledReadsAgainOnceWatching(t *testing.T) {
	now := time.Now()
	rec := ports.TaskRecord{ID: "t1", Replica: "A", Created: now, Updated: now, Ended: now, TTL: time.Hour,
		Status: taskCompleted, Returned: true, Result: []byte(`"content":[]`)}
	n := &sharedNames{store: settledStore{rec: rec}, me: "B", live: map[string]*call{},
		watchers: map[string]map[chan struct{}]struct{}{}}
	stale := &call{owner: owner{principal: ports.Principal{Subject: "alice"}}, mode: modeTask, id: "t1",
		elsewhere: "A", s: callState{task: true, status: taskWorking}}
	// A bound on a hang, not a speed requirement: the store answers at once.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	got, err := n.settled(ctx, stale)
	if err != nil {
		t.Fatalf("settled: %v (it waited for a Settled event that had already passed)", err)
	}
	if got == nil || got.snapshot().status != taskCompleted {
		t.Fatalf("settled returned %+v, want the task completed as the store holds it", got)
	}
	if len(n.watchers) != 0 {
		t.Errorf("watchers left: %v", n.watchers)
	}
}
