package agent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/ports"
)

// FuzzBoundTurn: whatever a finished turn holds, boundTurn keeps it within
// the budget, starts it with the prompt, ends it with the response, and
// leaves every tool call answered in order (docs/SPEC.md §9).
func FuzzBoundTurn(f *testing.F) {
	f.Add(uint16(4096), uint32(100), uint8(3), uint8(2), uint32(70_000), uint32(300))
	f.Add(uint16(1024), uint32(500_000), uint8(0), uint8(0), uint32(0), uint32(600_000))
	f.Add(uint16(65535), uint32(10), uint8(32), uint8(16), uint32(65_536), uint32(5))
	f.Fuzz(func(t *testing.T, budget16 uint16, promptLen uint32, steps, calls uint8, resultLen, answerLen uint32) {
		budget := max(int(budget16), 1024)
		steps, calls = steps%40, calls%20
		promptLen, resultLen, answerLen = promptLen%(1<<20), resultLen%(1<<17), answerLen%(1<<20)
		msgs := []ports.Message{{Role: ports.RoleUser, Content: strings.Repeat("p", int(promptLen))}}
		for s := range int(steps) {
			var tcs []ports.ToolCall
			for c := range int(calls) {
				tcs = append(tcs, ports.ToolCall{ID: fmt.Sprintf("c%d_%d", s, c), Name: "read_file", Arguments: `{"path":"` + strings.Repeat("a", int(resultLen%700)) + `"}`})
			}
			msgs = append(msgs, ports.Message{Role: ports.RoleAssistant, Content: strings.Repeat("t", int(resultLen%1000)), ToolCalls: tcs})
			for _, tc := range tcs {
				msgs = append(msgs, ports.Message{Role: ports.RoleTool, ToolCallID: tc.ID, Content: strings.Repeat("r", int(resultLen))})
			}
		}
		msgs = append(msgs, ports.Message{Role: ports.RoleAssistant, Content: strings.Repeat("z", int(answerLen))})
		got := boundTurn(msgs, budget)
		if n := turnSize(got); n > budget {
			t.Fatalf("bounded turn is %d bytes, budget %d", n, budget)
		}
		if got[0].Role != ports.RoleUser || got[len(got)-1].Role != ports.RoleAssistant || len(got[len(got)-1].ToolCalls) != 0 {
			t.Fatalf("bounded turn does not run from the prompt to the response: %v ... %v", got[0].Role, got[len(got)-1].Role)
		}
		if answerLen > 0 && !strings.HasPrefix(got[len(got)-1].Content, "z") {
			t.Fatalf("the response was lost: %.40q", got[len(got)-1].Content)
		}
		for i, m := range got {
			for k, tc := range m.ToolCalls {
				j := i + 1 + k
				if j >= len(got) || got[j].Role != ports.RoleTool || got[j].ToolCallID != tc.ID {
					t.Fatalf("call %s at %d is not answered in order", tc.ID, i)
				}
			}
		}
	})
}
