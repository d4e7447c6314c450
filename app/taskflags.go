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
		ttl: durationFlag(fs, "task-ttl", engine.DefaultTaskTTL, time.Millisecond, 0, "keep a finished task, for tasks/get, for `DURATION` (its ttlMs; at least 1ms)"),
		pollInterval: durationFlag(fs, "task-poll-interval", engine.DefaultTaskPollInterval, time.Millisecond, 0, "the pause between two polls of a task "+
			"its clients are told to keep (its pollIntervalMs), a `DURATION` of at least 1ms, shorter than --task-ttl"),
		maxPerClient: intFlag(fs, "max-tasks-per-client", engine.DefaultTasksPerPrincipal, 1, "at most `N` tasks run at once for one client "+
			"(over HTTP its principal, on a stream its connection); a call beyond is a tool error"),
		maxHeld: intFlag(fs, "max-tasks", engine.DefaultMaxTasks, 1, "at most `N` tasks held in all, running or finished and kept; "+
			"at the bound a finished task of the client holding the most is forgotten early, "+
			"and with every held task running a call beyond is a tool error"),
		resultBytesPerClient: intFlag(fs, "max-task-result-bytes-per-client", int64(engine.DefaultTaskResultBytesPerPrincipal), 1,
			"at most `N` bytes of results kept by one client's finished tasks; beyond, its oldest finished task is forgotten early "+
				"(never the one that just finished)"),
		maxResult: intFlag(fs, "max-task-result-bytes", int64(engine.DefaultMaxTaskResultBytes), 1,
			"at most `N` bytes of results kept by finished tasks in all; beyond, the oldest finished task of the client keeping "+
				"the most is forgotten early (never the one that just finished)"),
	}
}

// check returns what is wrong with the flags' values together, for a usage
// error, or "" (each value is checked as it is parsed: durations go on the
// wire in whole milliseconds, so one under 1ms would read 0). A poll
// interval not shorter than the TTL would tell a client to come back after
// its finished task is forgotten.
func (f *taskFlags) check() string {
	if *f.pollInterval >= *f.ttl {
		return fmt.Sprintf("--task-poll-interval (%v) must be shorter than --task-ttl (%v): "+
			"a client polling at that pace could find a finished task already forgotten", *f.pollInterval, *f.ttl)
	}
	return ""
}

// options returns the engine's TaskOptions.
func (f *taskFlags) options() engine.TaskOptions {
	return engine.TaskOptions{TTL: *f.ttl, PollInterval: *f.pollInterval, PerPrincipal: *f.maxPerClient, Max: *f.maxHeld,
		PerPrincipalResultBytes: *f.resultBytesPerClient, MaxResultBytes: *f.maxResult}
}
