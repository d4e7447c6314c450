package engine

import (
	"testing"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"
)

// TestCallMode: every path a tools/call can take is a row (docs/SPEC.md
// §3, §6, §14): what callMode decides from the request's era and
// declarations, the tool's task support and the engine's asking.
func TestCallMode(t *testing.T) {
	badTTL := jsonrpc.InvalidParams("task.ttl must be a non-negative number of milliseconds")
	badState := jsonrpc.InvalidParams("unknown or expired requestState")
	opt, req, forb := domain.TaskOptional, domain.TaskRequired, domain.TaskForbidden
	for _, c := range []struct {
		name string
		f    callFacts
		want mode
		code int
	}{
		// 2024-11-05 … 2025-06-18: tasks do not exist.
		{"legacy plain", callFacts{}, modePlain, 0},
		{"legacy required tool, no tasks revision", callFacts{known: true, support: req, augmented: true}, modePlain, 0},
		// 2025-11-25.
		{"2025-11-25 unknown tool", callFacts{tasksRevision: true, augmented: true}, modePlain, 0},
		{"2025-11-25 plain", callFacts{tasksRevision: true, known: true, support: opt}, modePlain, 0},
		{"2025-11-25 task", callFacts{tasksRevision: true, known: true, support: opt, augmented: true}, modeLegacyTask, 0},
		{"2025-11-25 required without params.task", callFacts{tasksRevision: true, known: true, support: req}, modeRefuse, CodeMethodNotFound},
		{"2025-11-25 forbidden with params.task", callFacts{tasksRevision: true, known: true, support: forb, augmented: true}, modeRefuse, CodeMethodNotFound},
		{"2025-11-25 bad ttl first", callFacts{tasksRevision: true, known: true, support: forb, augmented: true, taskParam: badTTL}, modeRefuse, CodeInvalidParams},
		// 2026-07-28.
		{"modern plain", callFacts{modern: true, known: true, support: forb}, modePlain, 0},
		{"modern unknown tool", callFacts{modern: true}, modePlain, 0},
		{"modern task", callFacts{modern: true, known: true, support: opt, declaresTasks: true}, modeTask, 0},
		{"modern task beats rounds", callFacts{modern: true, known: true, support: opt, declaresTasks: true, rounds: true}, modeTask, 0},
		{"modern optional, not declared", callFacts{modern: true, known: true, support: opt}, modePlain, 0},
		{"modern required, not declared", callFacts{modern: true, known: true, support: req}, modeRefuse, CodeMissingRequiredCapability},
		{"modern rounds", callFacts{modern: true, known: true, rounds: true}, modeRounds, 0},
		{"modern rounds, then a task", callFacts{modern: true, known: true, support: opt, startsInRequest: true, declaresTasks: true, rounds: true}, modeRounds, 0},
		{"modern in its request", callFacts{modern: true, known: true, support: opt, startsInRequest: true, declaresTasks: true}, modeInRequest, 0},
		{"modern in its request, not declared", callFacts{modern: true, known: true, support: opt, startsInRequest: true}, modePlain, 0},
		{"modern round members without rounds", callFacts{modern: true, known: true, roundParams: badState}, modeRefuse, CodeInvalidParams},
	} {
		c.f.name = "t"
		got, err := callMode(c.f)
		code := 0
		if err != nil {
			code = err.Code
		}
		if got != c.want || code != c.code {
			t.Errorf("%s: mode %d, error %v; want mode %d, code %d", c.name, got, err, c.want, c.code)
		}
	}
}
