package engine

import (
	"context"

	"github.com/agentmcp/agentmcp/domain"
)

// handler serves one request of a method in one era. It runs through
// serve: the Observer sees it (docs/SPEC.md §13).
type handler func(e *Engine, ctx context.Context, p *peer, in *inbound) reply

// method is one row of the method table (go-sdk's serverMethodInfos):
// what a method is in each era, how its request is checked, and what
// serves it. The eras differ by row, never by a branch in the pipeline.
type method struct {
	// legacy serves it in the initialize era (docs/SPEC.md §4); nil:
	// -32601 there. legacyTasks: only where the revision in force has
	// tasks (2025-11-25, docs/SPEC.md §14).
	legacy      handler
	legacyTasks bool
	// inline answers it on the reading goroutine before anything else
	// (initialize, ping): never in flight, never observed, and refused at
	// a stream's in-flight bound like any request.
	inline func(e *Engine, p *peer, in *inbound, inBatch bool) reply
	// modern serves it on 2026-07-28; nil: -32601 (HTTP 404).
	modern handler
	// mirror is the params member an HTTP request's Mcp-Name mirrors on
	// 2026-07-28 ("" for none; docs/SPEC.md §4).
	mirror string
	// needsTasks: a 2026-07-28 request must declare the tasks extension
	// (-32021, SEP-2575).
	needsTasks bool
	// feature is the server feature the method belongs to: served only
	// when the session's [ports.Features] has its port (otherwise -32601
	// in both eras, as for a session that implements none).
	feature feature
}

// feature names one of a session's optional server features.
type feature uint8

const (
	featureNone feature = iota // always served (tools, tasks, lifecycle)
	featureResources
	featurePrompts
	featureCompletions
	featureSubscriptions // Resources and a Subscriber
)

// methods is every method the engine serves. Adding a method is a row
// here and its handler.
var methods = map[string]*method{
	"initialize":      {inline: (*Engine).initialize},
	"ping":            {inline: pong},
	"server/discover": {modern: (*Engine).discover},
	"tools/list":      {legacy: (*Engine).listTools, modern: (*Engine).listTools},
	"tools/call":      {legacy: (*Engine).callTool, modern: (*Engine).callTool, mirror: "name"},
	"tasks/get":       {legacy: legacyTasks.get, legacyTasks: true, modern: modernTasks.get, mirror: "taskId", needsTasks: true},
	"tasks/update":    {modern: modernTasks.update, mirror: "taskId", needsTasks: true},
	"tasks/cancel":    {legacy: legacyTasks.cancel, legacyTasks: true, modern: modernTasks.cancel, mirror: "taskId", needsTasks: true},
	"tasks/result":    {legacy: legacyTasks.result, legacyTasks: true},
	"tasks/list":      {legacy: legacyTasks.list, legacyTasks: true},

	// docs/SPEC.md §2: the session's optional server features (features.go).
	"resources/list":           {legacy: (*Engine).listResources, modern: (*Engine).listResources, feature: featureResources},
	"resources/templates/list": {legacy: (*Engine).listResourceTemplates, modern: (*Engine).listResourceTemplates, feature: featureResources},
	"resources/read":           {legacy: (*Engine).readResource, modern: (*Engine).readResource, mirror: "uri", feature: featureResources},
	"prompts/list":             {legacy: (*Engine).listPrompts, modern: (*Engine).listPrompts, feature: featurePrompts},
	"prompts/get":              {legacy: (*Engine).getPrompt, modern: (*Engine).getPrompt, mirror: "name", feature: featurePrompts},
	"completion/complete":      {legacy: (*Engine).complete, modern: (*Engine).complete, feature: featureCompletions},

	// docs/SPEC.md §2 "Subscriptions" (subscriptions.go): legacy
	// resources/subscribe and unsubscribe, 2026-07-28 subscriptions/listen.
	"resources/subscribe":   {legacy: (*Engine).subscribe, feature: featureSubscriptions},
	"resources/unsubscribe": {legacy: (*Engine).unsubscribe, feature: featureSubscriptions},
	"subscriptions/listen":  {modern: (*Engine).listen, feature: featureSubscriptions},
}

// lookup is in's method row in its era; nil when that era has no such
// method, or the method's feature is not the session's (then -32601).
func (e *Engine) lookup(in *inbound) *method {
	m := methods[in.method]
	switch {
	case m == nil:
	case !e.serves(m.feature):
	case in.modern && m.modern != nil:
		return m
	case !in.modern && m.inline != nil:
		return m
	case !in.modern && m.legacy != nil && (!m.legacyTasks || in.version == tasksVersion):
		return m
	}
	return nil
}

// serve runs in's handler in its era.
func (m *method) serve(e *Engine, ctx context.Context, p *peer, in *inbound) reply {
	if in.modern {
		return m.modern(e, ctx, p, in)
	}
	return m.legacy(e, ctx, p, in)
}

// callFacts is what decides what a tools/call becomes: the request's era
// and what it declared, the tool's task support, the engine's asking.
type callFacts struct {
	name string
	// modern: a 2026-07-28 request; tasksRevision: a legacy one whose
	// revision has tasks (2025-11-25).
	modern, tasksRevision bool
	// known: the catalog could be read and has the tool (or it is the
	// submission tool); support and startsInRequest are its.
	known           bool
	support         domain.TaskSupport
	startsInRequest bool
	// declaresTasks: the request's client capabilities declare the tasks
	// extension (2026-07-28).
	declaresTasks bool
	// rounds: asking is on and the request declared form elicitation
	// (2026-07-28): its prompts can be input-required rounds.
	rounds bool
	// roundParams: why the request's round members are refused where no
	// round can exist; nil: none, or well-formed.
	roundParams *Error
	// augmented: params.task is present and not null (2025-11-25);
	// taskParam: why it is refused (not an object, a bad ttl).
	augmented bool
	taskParam *Error
}

// callMode decides what a tools/call becomes (docs/SPEC.md §3, §6, §14):
// plain (served in its request), rounds, in its request until the session
// makes it a task, a task of 2026-07-28 or of 2025-11-25, or refused with
// the error returned. It is a pure function of f, so every path a call can
// take is one row of its table test.
func callMode(f callFacts) (mode, *Error) {
	tasks := f.known && (f.support == domain.TaskOptional || f.support == domain.TaskRequired)
	if !f.modern {
		switch {
		case !f.tasksRevision || !f.known:
			return modePlain, nil
		case !f.augmented && f.support == domain.TaskRequired:
			return modeRefuse, errTaskRequired(f.name)
		case !f.augmented:
			return modePlain, nil
		case f.taskParam != nil:
			return modeRefuse, f.taskParam
		case !tasks:
			return modeRefuse, errTaskForbidden(f.name)
		}
		return modeLegacyTask, nil
	}
	switch {
	case tasks && !f.declaresTasks && f.support == domain.TaskRequired:
		return modeRefuse, errTasksNotDeclared("Tool " + f.name)
	case tasks && f.declaresTasks && !f.startsInRequest:
		// A declared request always gets a task: a client that declared
		// the extension already polls, and a short-wait shortcut would
		// make the answer's shape depend on timing.
		return modeTask, nil
	case f.rounds:
		return modeRounds, nil
	case f.roundParams != nil:
		return modeRefuse, f.roundParams
	case f.known && f.startsInRequest && f.declaresTasks:
		return modeInRequest, nil
	}
	return modePlain, nil
}
