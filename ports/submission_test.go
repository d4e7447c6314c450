package ports_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/ports"
)

// schemaNode is the part of TurnResultSchema the test reads.
type schemaNode struct {
	Type                 string                `json:"type"`
	Properties           map[string]schemaNode `json:"properties"`
	Required             []string              `json:"required"`
	Items                *schemaNode           `json:"items"`
	Enum                 []string              `json:"enum"`
	AdditionalProperties *bool                 `json:"additionalProperties"`
}

// TestTurnResultSchemaMatchesReport: the outputSchema names exactly the
// report's JSON members plus response, requires all but stopped, and its
// stopped enum is StopReasons; a rendered result conforms to it.
func TestTurnResultSchemaMatchesReport(t *testing.T) {
	var s schemaNode
	if err := json.Unmarshal(ports.TurnResultSchema, &s); err != nil {
		t.Fatalf("TurnResultSchema is not JSON: %v", err)
	}
	want := []string{"response"}
	rt := reflect.TypeFor[ports.TurnReport]()
	for i := range rt.NumField() {
		want = append(want, strings.Split(rt.Field(i).Tag.Get("json"), ",")[0])
	}
	var got []string
	for k := range s.Properties {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("schema properties %v, want the report's members %v", got, want)
	}
	req := slices.Clone(s.Required)
	slices.Sort(req)
	wantReq := slices.DeleteFunc(slices.Clone(want), func(k string) bool { return k == "stopped" })
	if !slices.Equal(req, wantReq) {
		t.Errorf("required %v, want %v", req, wantReq)
	}
	var enum []string
	for _, r := range ports.StopReasons {
		enum = append(enum, string(r))
	}
	if !slices.Equal(s.Properties["stopped"].Enum, enum) {
		t.Errorf("stopped enum %v, want %v", s.Properties["stopped"].Enum, enum)
	}

	for _, c := range []struct {
		name string
		r    ports.TurnReport
	}{
		{"empty", ports.TurnReport{Conversation: "default", Turn: 1}},
		{"full", ports.TurnReport{Conversation: "a.b-c_d", Turn: 3,
			ChangedFiles: []ports.ChangedFile{{Path: "a/b.txt", Added: 2, Removed: 1}},
			ToolCalls:    []ports.ToolCallReport{{Name: "write_file", OK: true}, {Name: "nope", OK: false}},
			Usage:        ports.TokenUsage{InputTokens: 10, OutputTokens: 4}, Stopped: ports.StopSuperseded}},
	} {
		b, err := ports.AppendTurnResult([]byte("x"), "hi <there> \"q\"", c.r)
		if !strings.Contains(string(b), `"response":"hi <there> \"q\""`) {
			t.Errorf("%s: %s: the response is not written as the text block writes it", c.name, b)
		}
		if err != nil || b[0] != 'x' {
			t.Fatalf("%s: AppendTurnResult = %q, %v", c.name, b, err)
		}
		conform(t, c.name, s, b[1:])
	}
}

// conform checks doc against the schema's object, array, string, integer
// and boolean shapes, required and additionalProperties, and enums.
func conform(t *testing.T, where string, s schemaNode, doc []byte) {
	t.Helper()
	var v any
	d := json.NewDecoder(strings.NewReader(string(doc)))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s: %s is not JSON: %v", where, doc, err)
	}
	var walk func(path string, s schemaNode, v any)
	walk = func(path string, s schemaNode, v any) {
		switch s.Type {
		case "object":
			m, ok := v.(map[string]any)
			if !ok {
				t.Errorf("%s%s: %v is not an object", where, path, v)
				return
			}
			for _, k := range s.Required {
				if _, ok := m[k]; !ok {
					t.Errorf("%s%s: %s missing", where, path, k)
				}
			}
			for k, x := range m {
				p, ok := s.Properties[k]
				if !ok {
					t.Errorf("%s%s: %s is not in the schema", where, path, k)
					continue
				}
				walk(path+"."+k, p, x)
			}
		case "array":
			a, ok := v.([]any)
			if !ok {
				t.Errorf("%s%s: %v is not an array", where, path, v)
				return
			}
			for _, x := range a {
				walk(path+"[]", *s.Items, x)
			}
		case "string":
			x, ok := v.(string)
			if !ok || len(s.Enum) > 0 && !slices.Contains(s.Enum, x) {
				t.Errorf("%s%s: %v is not a string of %v", where, path, v, s.Enum)
			}
		case "integer":
			if n, ok := v.(json.Number); !ok || strings.ContainsAny(n.String(), ".eE") {
				t.Errorf("%s%s: %v is not an integer", where, path, v)
			}
		case "boolean":
			if _, ok := v.(bool); !ok {
				t.Errorf("%s%s: %v is not a boolean", where, path, v)
			}
		}
	}
	walk("", s, v)
}
