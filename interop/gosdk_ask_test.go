package interop

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// modernVersion is the protocol revision the go-sdk client is asked to use.
const modernVersion = "2026-07-28"

// TestGoSDKAskClient plays the ask scenarios (ask_test.go) with the official
// Go SDK client at 2026-07-28, on stdio and on the loopback host (serve
// http, the bearer token from --token-file). The client has an
// ElicitationHandler and go-sdk's multi-round-trip support on (its default:
// ClientOptions.MultiRoundTrip nil): when a tools/call
// answers resultType input_required, the SDK calls the handler for each
// input request and retries the call with inputResponses and the
// requestState by itself, and CallTool returns the final result.
//
// With --ask-client each prompt must arrive as an input-required round
// (docs/SPEC.md §6: modern clients on every carrier get rounds; the server never
// sends a modern client a request), and only allow_once writes; without it
// no round happens and nothing is written.
func TestGoSDKAskClient(t *testing.T) {
	for _, carrier := range []string{"stdio", "http"} {
		t.Run(carrier, func(t *testing.T) {
			t.Parallel()
			for _, sc := range askScenarios() {
				t.Run(sc.name, func(t *testing.T) {
					t.Parallel()
					testGoSDKAsk(t, carrier, sc, true)
				})
			}
			t.Run("without_ask_client", func(t *testing.T) {
				t.Parallel()
				testGoSDKAsk(t, carrier, closedScenario(), false)
			})
		})
	}
}

func testGoSDKAsk(t *testing.T, carrier string, sc askScenario, ask bool) {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ws := newWorkspace(t)
	stderr := serverStderr(t)
	var flags []string
	if ask {
		flags = append(flags, "--ask-client")
	}

	c := newGoSDKCarrier(ctx, t, carrier, ws, stderr, flags...)
	script := &elicitScript{}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentmcp-interop-go-sdk-ask", Version: "v1.8.0"},
		&mcp.ClientOptions{ElicitationHandler: script.handle})
	cs := c.connect(ctx, t, client, modernVersion)

	paths := sc.paths(ws)
	var reports []callReport
	for _, call := range sc.calls {
		script.begin(call.answers)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: call.arguments()})
		r := callReport{Prompts: script.end()}
		if err != nil {
			msg := err.Error()
			r.Error = &msg
		} else if r.Result, err = json.Marshal(res); err != nil {
			t.Fatal(err)
		}
		if r.Disk, err = readDisk(ws, paths); err != nil {
			t.Fatal(err)
		}
		reports = append(reports, r)
	}

	checkAskScenario(t, sc, ws, reports)
	checkInputRequiredRounds(t, c.rec, sc, reports)

	c.close(t)
}

// elicitScript is the client's ElicitationHandler: it records each prompt
// and answers it with the current call's next answer (a surplus prompt is
// cancelled, and still recorded).
type elicitScript struct {
	mu      sync.Mutex
	answers []promptAnswer
	prompts []promptReport
}

func (s *elicitScript) begin(answers []promptAnswer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers, s.prompts = slices.Clone(answers), nil
}

func (s *elicitScript) end() []promptReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.prompts
	s.answers, s.prompts = nil, nil
	return ps
}

func (s *elicitScript) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	params, err := json.Marshal(req.Params)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prompts = append(s.prompts, promptReport{Params: params})
	if len(s.answers) == 0 {
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	return &mcp.ElicitResult{Action: a.Action, Content: a.Content}, nil
}

// toolsCallParams is what the client sent in a tools/call.
type toolsCallParams struct {
	Name           string                     `json:"name"`
	Arguments      json.RawMessage            `json:"arguments"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	RequestState   *string                    `json:"requestState"`
}

// roundResult is what the server answered a tools/call with, as far as
// rounds are concerned.
type roundResult struct {
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
	Meta          map[string]json.RawMessage `json:"_meta"`
}

// checkInputRequiredRounds checks, from the recorded wire traffic, that the
// session was 2026-07-28 (server/discover first, no initialize) and that
// every prompt reached the client as an input-required round (docs/SPEC.md §6):
//   - the server sent the client no request at all;
//   - each write_file call is a chain of tools/call requests, each with a
//     new id: the first without requestState, each retry with the same name
//     and arguments, inputResponses.prompt holding the handler's answer, and
//     the requestState of the answer before it;
//   - every answer but the last is {resultType:"input_required",
//     inputRequests:{prompt:{method:"elicitation/create",params:{mode:"form",
//     …}}}, requestState} whose prompt is the one the handler saw, and
//     whose requestState is 32 bytes of base64url never seen before; the
//     last is resultType complete.
func checkInputRequiredRounds(t *testing.T, rec *wireRecorder, sc askScenario, reports []callReport) {
	t.Helper()
	methods := rec.methods()
	if len(methods) == 0 || methods[0] != "server/discover" || slices.Contains(methods, "initialize") {
		t.Errorf("client sent %q, want server/discover first and no initialize", methods)
	}
	for _, req := range rec.serverRequests() {
		if req.ID.IsValid() {
			t.Errorf("the server sent the modern client a request: %s %s (docs/SPEC.md §4: never)", req.Method, req.Params)
		}
	}

	type link struct {
		req    *jsonrpc.Request
		params toolsCallParams
	}
	var chains [][]link
	for _, req := range rec.requests() {
		if req.Method != "tools/call" {
			continue
		}
		var p toolsCallParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			t.Fatalf("tools/call params %s: %v", req.Params, err)
		}
		if p.RequestState == nil || len(chains) == 0 {
			chains = append(chains, nil)
		}
		chains[len(chains)-1] = append(chains[len(chains)-1], link{req, p})
	}
	if len(chains) != len(sc.calls) {
		t.Fatalf("%d chains of tools/call on the wire, want one per call (%d)", len(chains), len(sc.calls))
	}

	states := map[string]bool{}
	for i, chain := range chains {
		call := sc.calls[i]
		label := fmt.Sprintf("call %d: write_file %q answering %v", i+1, call.path, call.answers)
		if len(chain) != len(call.answers)+1 {
			t.Errorf("%s: %d tools/call requests, want %d (one per prompt, then the final answer)", label, len(chain), len(call.answers)+1)
		}
		var prevState string
		for k, l := range chain {
			if k > 0 {
				first := chain[0]
				if l.req.ID == chain[k-1].req.ID {
					t.Errorf("%s: retry %d reuses the id %v", label, k, l.req.ID.Raw())
				}
				if eq, err := jsonEqual(l.params.Arguments, first.params.Arguments); l.params.Name != first.params.Name || err != nil || !eq {
					t.Errorf("%s: retry %d is %s %s, want the same call %s %s", label, k, l.params.Name, l.params.Arguments, first.params.Name, first.params.Arguments)
				}
				if l.params.RequestState == nil || *l.params.RequestState != prevState {
					t.Errorf("%s: retry %d carries requestState %v, want the previous round's %q", label, k, l.params.RequestState, prevState)
				}
				var got promptAnswer
				if raw, ok := l.params.InputResponses["prompt"]; !ok || json.Unmarshal(raw, &got) != nil {
					t.Errorf("%s: retry %d has inputResponses %v, want the answer under \"prompt\"", label, k, l.params.InputResponses)
				} else if k-1 < len(call.answers) && (got.Action != call.answers[k-1].Action || fmt.Sprint(got.Content) != fmt.Sprint(call.answers[k-1].Content)) {
					t.Errorf("%s: retry %d answers %s, want %v", label, k, raw, call.answers[k-1])
				}
			}

			resp, ok := rec.responseTo(l.req)
			if !ok {
				t.Errorf("%s: request %d (id %v) has no recorded response", label, k+1, l.req.ID.Raw())
				break
			}
			if resp.Error != nil {
				t.Errorf("%s: request %d answered with the error %v", label, k+1, resp.Error)
				break
			}
			var res roundResult
			if err := json.Unmarshal(resp.Result, &res); err != nil {
				t.Errorf("%s: request %d result %s: %v", label, k+1, resp.Result, err)
				break
			}
			if _, ok := res.Meta[metaServerInfo]; !ok {
				t.Errorf("%s: request %d result _meta lacks %s", label, k+1, metaServerInfo)
			}
			if k == len(chain)-1 {
				if res.ResultType != "complete" {
					t.Errorf("%s: the last answer has resultType %q, want complete: %.500s", label, res.ResultType, resp.Result)
				}
				break
			}
			if res.ResultType != "input_required" {
				t.Errorf("%s: request %d was retried after resultType %q, want input_required: %.500s", label, k+1, res.ResultType, resp.Result)
			}
			var prompt struct {
				Method string `json:"method"`
				Params struct {
					Mode    string `json:"mode"`
					Message string `json:"message"`
				} `json:"params"`
			}
			raw, ok := res.InputRequests["prompt"]
			if !ok || len(res.InputRequests) != 1 || json.Unmarshal(raw, &prompt) != nil ||
				prompt.Method != "elicitation/create" || prompt.Params.Mode != "form" {
				t.Errorf("%s: round %d inputRequests %.500s, want exactly {prompt: an elicitation/create form}", label, k+1, resp.Result)
			}
			if k < len(reports[i].Prompts) {
				var seen struct {
					Message string `json:"message"`
				}
				if json.Unmarshal(reports[i].Prompts[k].Params, &seen) != nil || seen.Message != prompt.Params.Message {
					t.Errorf("%s: round %d asked %q but the handler saw %s", label, k+1, prompt.Params.Message, reports[i].Prompts[k].Params)
				}
			}
			if b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(res.RequestState, "=")); err != nil || len(b) != 32 {
				t.Errorf("%s: round %d requestState %q is not 32 bytes of base64url", label, k+1, res.RequestState)
			}
			if states[res.RequestState] {
				t.Errorf("%s: round %d requestState %q was minted before", label, k+1, res.RequestState)
			}
			states[res.RequestState] = true
			prevState = res.RequestState
		}
	}
}
