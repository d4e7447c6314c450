package app

import (
	"flag"
	"fmt"
	"time"

	"github.com/agentmcp/agentmcp/engine"
)

// taskFlags are the bounds and times of the engine's tasks (docs/SPEC.md
// §14): every serve command takes them (addServeFlags), each one field of
// engine.TaskOptions.
type taskFlags struct {
	ttl, pollInterval               *time.Duration
	maxPerClient, maxHeld           *int
	resultBytesPerClient, maxResult *int64
}

func addTaskFlags(fs *flag.FlagSet) *taskFlags {
	return &taskFlags{
		ttl: fs.Duration("task-ttl", engine.DefaultTaskTTL, "keep a finished task, for tasks/get, for `DURATION` (its ttlMs; at least 1ms)"),
		pollInterval: fs.Duration("task-poll-interval", engine.DefaultTaskPollInterval, "the pause between two polls of a task "+
			"its clients are told to keep (its pollIntervalMs), a `DURATION` of at least 1ms, shorter than --task-ttl"),
		maxPerClient: fs.Int("max-tasks-per-client", engine.DefaultTasksPerPrincipal, "at most `N` tasks run at once for one client "+
			"(over HTTP its principal, on a stream its connection); a call beyond is a tool error"),
		maxHeld: fs.Int("max-tasks", engine.DefaultMaxTasks, "at most `N` tasks held in all, running or finished and kept; "+
			"at the bound a finished task of the client holding the most is forgotten early, "+
			"and with every held task running a call beyond is a tool error"),
		resultBytesPerClient: fs.Int64("max-task-result-bytes-per-client", engine.DefaultTaskResultBytesPerPrincipal,
			"at most `N` bytes of results kept by one client's finished tasks; beyond, its oldest finished task is forgotten early "+
				"(never the one that just finished)"),
		maxResult: fs.Int64("max-task-result-bytes", engine.DefaultMaxTaskResultBytes,
			"at most `N` bytes of results kept by finished tasks in all; beyond, the oldest finished task of the client keeping "+
				"the most is forgotten early (never the one that just finished)"),
	}
}

// check returns what is wrong with the flags' values, for a usage error,
// or "". Durations go on the wire in whole milliseconds, so one under 1ms
// would read 0; a poll interval not shorter than the TTL would tell a
// client to come back after its finished task is forgotten.
func (f *taskFlags) check() string {
	switch {
	case *f.ttl < time.Millisecond:
		return "--task-ttl must be at least 1ms, got " + f.ttl.String()
	case *f.pollInterval < time.Millisecond:
		return "--task-poll-interval must be at least 1ms, got " + f.pollInterval.String()
	case *f.pollInterval >= *f.ttl:
		return fmt.Sprintf("--task-poll-interval (%v) must be shorter than --task-ttl (%v): "+
			"a client polling at that pace could find a finished task already forgotten", *f.pollInterval, *f.ttl)
	case *f.maxPerClient < 1:
		return fmt.Sprintf("--max-tasks-per-client must be at least 1, got %d", *f.maxPerClient)
	case *f.maxHeld < 1:
		return fmt.Sprintf("--max-tasks must be at least 1, got %d", *f.maxHeld)
	case *f.resultBytesPerClient < 1:
		return fmt.Sprintf("--max-task-result-bytes-per-client must be at least 1, got %d", *f.resultBytesPerClient)
	case *f.maxResult < 1:
		return fmt.Sprintf("--max-task-result-bytes must be at least 1, got %d", *f.maxResult)
	}
	return ""
}

// options returns the engine's TaskOptions.
func (f *taskFlags) options() engine.TaskOptions {
	return engine.TaskOptions{TTL: *f.ttl, PollInterval: *f.pollInterval, PerPrincipal: *f.maxPerClient, Max: *f.maxHeld,
		PerPrincipalResultBytes: *f.resultBytesPerClient, MaxResultBytes: *f.maxResult}
}
