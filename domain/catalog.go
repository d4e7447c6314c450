package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
)

// Tool is one tool as MCP's tools/list advertises it (docs/SPEC.md §2):
// name, an optional title, description, inputSchema and optional
// annotations, serialised in that order with the absent optionals left out.
// InputSchema is a JSON Schema object kept as the session wrote it, so key
// order and unknown keywords survive. Only the submission tool of a session
// that keeps named conversations has an OutputSchema (docs/SPEC.md §2, §9):
// a runtime tool's results are execution envelopes, never structuredContent.
type Tool struct {
	Name string `json:"name"`
	// Title is a human-readable display name (MCP 2025-06-18+ BaseMetadata
	// title); "" leaves it out. Older clients ignore it.
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema is the JSON Schema of the tool's structuredContent
	// (MCP 2025-06-18+); nil leaves it out. A runtime tool may not have one
	// ([NewCatalog]); the engine leaves it out for a client older than
	// 2025-06-18.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Annotations are the tool's behaviour hints; nil leaves them out.
	Annotations *ToolAnnotations `json:"annotations,omitempty"`
	// Meta is the tool's _meta object (JSON text); nil leaves it out. Only
	// the engine sets one, the submission tool's when it links the turn
	// view (docs/SPEC.md §2 "The turn view"): a catalog keeps no runtime
	// tool's.
	Meta json.RawMessage `json:"_meta,omitempty"`
	// TaskSupport says whether a call of the tool may run as an MCP task
	// (docs/SPEC.md §14); "" means TaskForbidden. It is not part of the
	// 2026-07-28 Tool: the engine decides from it which calls become tasks.
	TaskSupport TaskSupport `json:"-"`
	// TaskStartsInRequest, for a tool whose TaskSupport is optional or
	// required, lets a 2026-07-28 call start in its request and become a
	// task only when the session calls ports.StartTask (SEP-2663
	// "Composing with MRTR"): before that its prompts are input-required
	// rounds (docs/SPEC.md §6), after it the task's input requests. false
	// (the default) makes a call from a client that declared the tasks
	// extension a task at once (docs/SPEC.md §14). It is not on the wire.
	TaskStartsInRequest bool `json:"-"`
}

// TaskSupport is MCP's ToolExecution.taskSupport
// (https://modelcontextprotocol.io/specification/2025-11-25/basic/utilities/tasks):
// whether a call of a tool may, must or must not run as a task.
type TaskSupport string

const (
	// TaskForbidden: every call answers in its own request (the default).
	TaskForbidden TaskSupport = "forbidden"
	// TaskOptional: a call may become a task when the client can hold one.
	TaskOptional TaskSupport = "optional"
	// TaskRequired: a call from a client that cannot hold a task is refused
	// (-32021 on 2026-07-28).
	TaskRequired TaskSupport = "required"
)

// ToolAnnotations are MCP's ToolAnnotations hints
// (https://modelcontextprotocol.io/specification/2025-06-18/schema#toolannotations),
// which clients use to decide what a tool may do without asking (a
// read-only mode runs only readOnlyHint tools). Each hint is optional: nil
// leaves it out and the client assumes MCP's default (readOnlyHint false,
// destructiveHint true, idempotentHint false, openWorldHint true). The
// types are the wire's: each hint can only ever be a boolean, so the engine
// has nothing to check beyond what this type allows. Hints are advice to
// the client, never a permission: the session's own permission wrapper
// still decides.
type ToolAnnotations struct {
	// ReadOnlyHint: the tool does not modify its environment.
	ReadOnlyHint *bool `json:"readOnlyHint,omitempty"`
	// DestructiveHint: the tool may perform destructive updates (meaningful
	// only when ReadOnlyHint is false).
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// IdempotentHint: calling it again with the same arguments has no
	// further effect (meaningful only when ReadOnlyHint is false).
	IdempotentHint *bool `json:"idempotentHint,omitempty"`
	// OpenWorldHint: the tool may interact with entities outside the
	// session (the web, a remote service), not only a closed domain.
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// Hint returns a pointer to b, for filling [ToolAnnotations].
func Hint(b bool) *bool { return &b }

// equalAnnotations compares two annotation sets by value.
func equalAnnotations(a, b *ToolAnnotations) bool {
	if a == nil || b == nil {
		return a == b
	}
	eq := func(x, y *bool) bool { return (x == nil && y == nil) || (x != nil && y != nil && *x == *y) }
	return eq(a.ReadOnlyHint, b.ReadOnlyHint) && eq(a.DestructiveHint, b.DestructiveHint) &&
		eq(a.IdempotentHint, b.IdempotentHint) && eq(a.OpenWorldHint, b.OpenWorldHint)
}

// Clone returns a copy that shares nothing with a (nil for nil).
func (a *ToolAnnotations) Clone() *ToolAnnotations {
	if a == nil {
		return nil
	}
	cp := func(p *bool) *bool {
		if p == nil {
			return nil
		}
		return Hint(*p)
	}
	return &ToolAnnotations{cp(a.ReadOnlyHint), cp(a.DestructiveHint), cp(a.IdempotentHint), cp(a.OpenWorldHint)}
}

// toolNamePattern is the MCP 2025-11-25 tool-name rule (1–128 of
// A-Z a-z 0-9 _ - .), applied to runtime tools and the submission tool alike.
var toolNamePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// ValidToolName reports whether name satisfies the MCP tool-name rule.
func ValidToolName(name string) bool { return toolNamePattern.MatchString(name) }

// CatalogError is a catalog validation failure. Its message is client-visible
// and fixed by docs/SPEC.md §2; at start it fails start-up, afterwards tools/list
// answers -32603 with it and tools/call a tool error with it.
type CatalogError struct{ Message string }

func (e *CatalogError) Error() string { return e.Message }

// Catalog is a validated tool catalog: the runtime tools in the session's
// order, then the submission tool last.
type Catalog struct {
	submit  SubmitTool
	runtime []Tool
	index   map[string]int
}

// NewCatalog validates the session's runtime tools against the submission tool
// and returns the catalog, or a *CatalogError naming the first violation in
// the session's order (docs/SPEC.md §2): an invalid name, a duplicate or reserved name,
// an input schema whose root is not {"type":"object"}, or an outputSchema
// (a runtime tool's result is an execution envelope, docs/SPEC.md §3.4).
func NewCatalog(runtime []Tool, submit SubmitTool) (*Catalog, error) {
	// Own a deep copy: Same compares against it, and the session may reuse
	// its slices.
	owned := make([]Tool, len(runtime))
	for i, t := range runtime {
		t.InputSchema = append(json.RawMessage(nil), t.InputSchema...)
		t.Annotations = t.Annotations.Clone()
		t.Meta = nil // the engine's alone (the submission tool's view link)
		owned[i] = t
	}
	runtime = owned
	c := &Catalog{submit: submit, runtime: runtime, index: make(map[string]int, len(runtime))}
	for i, t := range runtime {
		if !ValidToolName(t.Name) {
			return nil, &CatalogError{Message: "Invalid MCP tool name: " + t.Name}
		}
		if _, dup := c.index[t.Name]; dup || t.Name == submit.Name {
			return nil, &CatalogError{Message: "Duplicate or reserved MCP tool name: " + t.Name}
		}
		if !objectRootSchema(t.InputSchema) {
			return nil, &CatalogError{Message: fmt.Sprintf("Tool %s has an invalid input schema: the root type must be \"object\"", t.Name)}
		}
		if t.OutputSchema != nil {
			return nil, &CatalogError{Message: fmt.Sprintf("Tool %s declares an outputSchema: a runtime tool's result is an execution envelope", t.Name)}
		}
		c.index[t.Name] = i
	}
	return c, nil
}

// objectRootSchema reports whether schema is a JSON object whose "type"
// member is exactly the string "object".
func objectRootSchema(schema json.RawMessage) bool {
	s := bytes.TrimSpace(schema)
	if len(s) == 0 || s[0] != '{' {
		return false
	}
	var root struct {
		Type json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(s, &root); err != nil {
		return false
	}
	var typ string
	return json.Unmarshal(root.Type, &typ) == nil && typ == "object"
}

// Tools returns the advertised list: runtime tools in order, submission tool
// last. The slice is fresh; the caller may keep it.
func (c *Catalog) Tools() []Tool {
	out := make([]Tool, 0, len(c.runtime)+1)
	out = append(out, c.runtime...)
	return append(out, c.submit.Tool())
}

// IsSubmit reports whether name is the submission tool.
func (c *Catalog) IsSubmit(name string) bool { return name == c.submit.Name }

// Has reports whether name is a runtime tool of this catalog.
func (c *Catalog) Has(name string) bool {
	_, ok := c.index[name]
	return ok
}

// TaskSupport says whether a call of name may run as a task: the
// submission tool's is TaskOptional (an agent turn takes minutes), a runtime
// tool's is its own, TaskForbidden when unset or unknown.
func (c *Catalog) TaskSupport(name string) TaskSupport {
	if name == c.submit.Name {
		return TaskOptional
	}
	i, ok := c.index[name]
	if !ok || c.runtime[i].TaskSupport == "" {
		return TaskForbidden
	}
	return c.runtime[i].TaskSupport
}

// TaskStartsInRequest reports whether a call of name supports tasks and
// starts in its request, becoming a task when the session asks
// (Tool.TaskStartsInRequest); false for the submission tool and unknown
// names.
func (c *Catalog) TaskStartsInRequest(name string) bool {
	i, ok := c.index[name]
	if !ok {
		return false
	}
	t := c.runtime[i]
	return t.TaskStartsInRequest && (t.TaskSupport == TaskOptional || t.TaskSupport == TaskRequired)
}

// UnknownToolMessage is the tool-error text for a name outside the catalog
// (docs/SPEC.md §3.3). MCP would allow -32602 here; a tool error lets the model see
// the mistake and correct it.
func UnknownToolMessage(name string) string { return "Unknown tool: " + name }

// Same reports whether tools is exactly the runtime list this catalog was
// built from (names, titles, descriptions, schema bytes and annotations, in
// order), so a caller may reuse the validation.
func (c *Catalog) Same(tools []Tool) bool {
	if len(tools) != len(c.runtime) {
		return false
	}
	for i, t := range tools {
		r := c.runtime[i]
		if t.Name != r.Name || t.Title != r.Title || t.Description != r.Description ||
			!bytes.Equal(t.InputSchema, r.InputSchema) || t.OutputSchema != nil || !equalAnnotations(t.Annotations, r.Annotations) ||
			t.TaskSupport != r.TaskSupport || t.TaskStartsInRequest != r.TaskStartsInRequest {
			return false
		}
	}
	return true
}
