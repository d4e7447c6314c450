package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
)

// Tool is one tool as MCP's tools/list advertises it: exactly name,
// description and inputSchema (docs/SPEC.md §2). InputSchema is a JSON Schema object
// kept as the session wrote it, so key order and unknown keywords survive.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
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
// or an input schema whose root is not {"type":"object"}.
func NewCatalog(runtime []Tool, submit SubmitTool) (*Catalog, error) {
	// Own a deep copy: Same compares against it, and the session may reuse
	// its slices.
	owned := make([]Tool, len(runtime))
	for i, t := range runtime {
		t.InputSchema = append(json.RawMessage(nil), t.InputSchema...)
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

// UnknownToolMessage is the tool-error text for a name outside the catalog
// (docs/SPEC.md §3.3). MCP would allow -32602 here; a tool error lets the model see
// the mistake and correct it.
func UnknownToolMessage(name string) string { return "Unknown tool: " + name }

// Same reports whether tools is exactly the runtime list this catalog was
// built from (names, descriptions and schema bytes, in order), so a caller
// may reuse the validation.
func (c *Catalog) Same(tools []Tool) bool {
	if len(tools) != len(c.runtime) {
		return false
	}
	for i, t := range tools {
		r := c.runtime[i]
		if t.Name != r.Name || t.Description != r.Description || !bytes.Equal(t.InputSchema, r.InputSchema) {
			return false
		}
	}
	return true
}
