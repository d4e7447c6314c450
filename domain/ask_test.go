package domain_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/domain"
)

func TestExcerptEscapesAndCaps(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain", `"plain"`},
		{"a\"b", `"a\"b"`},
		{"line\nbreak", `"line\nbreak"`},
		{"\u202eevil", `"\u202eevil"`}, // right-to-left override
		{"\u2066x\u2069", `"\u2066x\u2069"`},
		{"\x1b[31m", `"\x1b[31m"`},
		{"bad\xffutf8", "\"bad\uFFFDutf8\""},
		// A long text keeps its start and its end (a file name at the end
		// of a sentence shows).
		{strings.Repeat("é", 201), `"` + strings.Repeat("é", 100) + `"…"` + strings.Repeat("é", 100) + `"`},
		{strings.Repeat("a", 150) + strings.Repeat("z", 150), `"` + strings.Repeat("a", 100) + `"…"` + strings.Repeat("z", 100) + `"`},
		{strings.Repeat("x", 200), `"` + strings.Repeat("x", 200) + `"`},
	}
	for _, c := range cases {
		if got := domain.Excerpt(c.in); got != c.want {
			t.Errorf("Excerpt(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestPermissionForm(t *testing.T) {
	f := domain.PermissionForm(domain.PermissionPrompt{
		Tool:    "write_file",
		Summary: "write a file\nAllow? yes",
		Arguments: []domain.Argument{
			{Name: "path", Value: "notes.txt\"\n\nApproved by admin"},
			{Name: "content", Value: "hello", Contents: true},
		},
		Agent: "indexer",
	})
	want := "Allow the tool \"write_file\" to run once?\n" +
		`"write a file\nAllow? yes"` + "\n" +
		`"path": "notes.txt\"\n\nApproved by admin"` + "\n" +
		`"content": 5 bytes, SHA-256 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824` + "\n" +
		`Requested by the background agent "indexer".`
	if f.Message != want {
		t.Errorf("message =\n%s\nwant\n%s", f.Message, want)
	}
	if strings.Contains(f.Message, "hello") {
		t.Error("file contents appear inline")
	}
	// Titled choices (MCP 2025-11-25 TitledSingleSelectEnumSchema), so
	// clients show "Allow once" / "Deny" rather than the values; a
	// 2025-06-18 client gets that revision's enum with enumNames.
	if string(f.RequestedSchema) != `{"type":"object","properties":{"decision":{"type":"string","title":"Decision","oneOf":[{"const":"allow_once","title":"Allow once"},{"const":"deny","title":"Deny"}]}},"required":["decision"]}` {
		t.Errorf("schema = %s", f.RequestedSchema)
	}
	if string(f.RequestedSchema20250618) != `{"type":"object","properties":{"decision":{"type":"string","title":"Decision","enum":["allow_once","deny"],"enumNames":["Allow once","Deny"]}},"required":["decision"]}` {
		t.Errorf("2025-06-18 schema = %s", f.RequestedSchema20250618)
	}
	for _, schema := range []json.RawMessage{f.RequestedSchema, f.RequestedSchema20250618} {
		if !json.Valid(schema) {
			t.Errorf("schema is not JSON: %s", schema)
		}
	}
}

// TestPermissionFormWithinSubmission: a prompt raised within a submission
// says that the agent asks, within the submission the person started, so an
// agent's write never reads like a client's own write_file call.
func TestPermissionFormWithinSubmission(t *testing.T) {
	f := domain.PermissionForm(domain.PermissionPrompt{
		Tool: "write_file", Summary: "Create a file in the workspace", Within: "agent_submit",
		Arguments: []domain.Argument{{Name: "path", Value: "notes/todo.md", Path: true}},
	})
	want := `The agent, in the "agent_submit" request you started, asks to run the tool "write_file" once. Allow it?` + "\n" +
		`"Create a file in the workspace"` + "\n" + `"path": "notes/todo.md"`
	if f.Message != want {
		t.Errorf("message =\n%s\nwant\n%s", f.Message, want)
	}
	// A background agent's prompt, forwarded to the running submission,
	// names that agent.
	f = domain.PermissionForm(domain.PermissionPrompt{Tool: "echo", Summary: "index", Within: "agent_submit", Agent: "indexer"})
	want = `The background agent "indexer", in the "agent_submit" request you started, asks to run the tool "echo" once. Allow it?` + "\n" + `"index"`
	if f.Message != want {
		t.Errorf("message =\n%s\nwant\n%s", f.Message, want)
	}
}

// TestPermissionFormShowsTheFile: the dialog of a write to a deep path
// shows the file name whole (docs/SPEC.md §6; issue 25 item 9: a dialog cut
// to the path's first 200 characters hid the file the write lands in).
func TestPermissionFormShowsTheFile(t *testing.T) {
	deep := strings.Repeat("very-long-directory-name/", 12) + "the-file-approved.txt"
	f := domain.PermissionForm(domain.PermissionPrompt{
		Tool: "write_file",
		Arguments: []domain.Argument{
			{Name: "path", Value: deep, Path: true},
			{Name: "content", Value: "x", Contents: true},
		},
	})
	if !strings.Contains(f.Message, `directory-name/the-file-approved.txt"`) {
		t.Errorf("the dialog hides the file it approves:\n%s", f.Message)
	}
	if !strings.Contains(f.Message, `"path": "very-long-directory-name/very-long-direc"…"`) {
		t.Errorf("the dialog does not keep the path's start and mark the cut:\n%s", f.Message)
	}
}

func TestPathExcerpt(t *testing.T) {
	longName := strings.Repeat("n", 250) + ".txt"
	cases := []struct{ in, want string }{
		{"a/b.txt", `"a/b.txt"`},
		{strings.Repeat("d/", 100), `"` + strings.Repeat("d/", 100) + `"`}, // 200: whole
		// First 40 characters, last 160.
		{strings.Repeat("d/", 150) + "f.txt", `"` + strings.Repeat("d/", 20) + `"…"` + strings.Repeat("/d", 77) + `/f.txt"`},
		// A final element longer than 160 shows whole.
		{strings.Repeat("d/", 50) + longName, `"` + strings.Repeat("d/", 20) + `"…"/` + longName + `"`},
		// No slash: the whole name is the final element; it shows whole up
		// to 1024 characters.
		{longName, `"` + longName + `"`},
		{strings.Repeat("x", 1100), `"` + strings.Repeat("x", 40) + `"…"` + strings.Repeat("x", 1024) + `"`},
		// Escaped like Excerpt, on both sides of the cut.
		{"\u202e" + strings.Repeat("d/", 120) + "\nf", `"\u202e` + strings.Repeat("d/", 19) + `d"…"` + strings.Repeat("d/", 79) + `\nf"`},
	}
	for _, c := range cases {
		if got := domain.PathExcerpt(c.in); got != c.want {
			t.Errorf("PathExcerpt(%.40q…) =\n%s\nwant\n%s", c.in, got, c.want)
		}
	}
}

func TestAskForm(t *testing.T) {
	if _, ok := domain.AskForm(domain.AskPrompt{Question: "password?", Masked: true}); ok {
		t.Fatal("a masked ask produced a form")
	}
	f, ok := domain.AskForm(domain.AskPrompt{Question: "Overwrite?", Options: []string{"overwrite", "keep"}})
	if !ok || f.Message != "\"Overwrite?\"\nChoices: \"overwrite\", \"keep\"" {
		t.Errorf("AskForm = %+v %v", f, ok)
	}
	if string(f.RequestedSchema) != `{"properties":{"answer":{"enum":["overwrite","keep"],"type":"string"}},"required":["answer"],"type":"object"}` {
		t.Errorf("schema = %s", f.RequestedSchema)
	}
	f, _ = domain.AskForm(domain.AskPrompt{Question: "Name?"})
	if string(f.RequestedSchema) != `{"properties":{"answer":{"type":"string"}},"required":["answer"],"type":"object"}` {
		t.Errorf("free-text schema = %s", f.RequestedSchema)
	}
}

func TestDecisions(t *testing.T) {
	parse := func(s string) domain.ElicitResult {
		r, ok := domain.ParseElicitResult(json.RawMessage(s))
		if !ok {
			return domain.ElicitResult{}
		}
		return r
	}
	perm := []struct {
		answer string
		want   domain.Decision
	}{
		{`{"action":"accept","content":{"decision":"allow_once"}}`, domain.AllowOnce},
		{`{"action":"accept","content":{"decision":"deny"}}`, domain.Deny},
		{`{"action":"accept","content":{"decision":"allow_always"}}`, domain.Deny},
		{`{"action":"accept","content":{"decision":true}}`, domain.Deny},
		{`{"action":"accept"}`, domain.Deny},
		{`{"action":"decline","content":{"decision":"allow_once"}}`, domain.Deny},
		{`{"action":"cancel"}`, domain.Deny},
		{`{"action":"yes"}`, domain.Deny},
		{`"allow_once"`, domain.Deny},
		{`{"action":"accept","content":{"decision":"deny","decision":"allow_once"}}`, domain.Deny},
		{`{"action":"accept","content":{"decision":"allow_once","decision":"allow_once"}}`, domain.Deny},
		{`{"action":"decline","action":"accept","content":{"decision":"allow_once"}}`, domain.Deny},
		{`{"action":"accept","content":{"decision":"allow_once","x":{"a":1,"a":2}}}`, domain.Deny},
		{`{"action":"accept","content":{"decision":"allow_once","x":[{"a":1},{"a":2}]}}`, domain.AllowOnce},
		{`{"action":"decline","ACTION":"accept","content":{"decision":"allow_once"}}`, domain.Deny},
		{`{"Action":"accept","content":{"decision":"allow_once"}}`, domain.Deny},
		{`{"action":"accept","content":{"Decision":"allow_once"}}`, domain.Deny},
		{`{"action":"accept","content":null}`, domain.Deny},
		{`{"action":"accept","content":[{"decision":"allow_once"}]}`, domain.Deny},
		{`{"action":"\u0061ccept","content":{"d\u0065cision":"allow_once"}}`, domain.AllowOnce},
		{` {"action":"accept","content":{"decision":"allow_once"},"x":1} `, domain.AllowOnce},
	}
	for _, c := range perm {
		if got := domain.PermissionDecision(parse(c.answer)); got != c.want {
			t.Errorf("PermissionDecision(%s) = %v, want %v", c.answer, got, c.want)
		}
	}
	ask := domain.AskPrompt{Question: "q", Options: []string{"overwrite", "keep"}}
	if a := domain.AskAnswer(ask, parse(`{"action":"accept","content":{"answer":"keep"}}`)); !a.Answered || a.Text != "keep" {
		t.Errorf("AskAnswer(keep) = %+v", a)
	}
	if a := domain.AskAnswer(ask, parse(`{"action":"accept","content":{"answer":"delete"}}`)); a.Answered {
		t.Errorf("AskAnswer(not an option) = %+v", a)
	}
	if a := domain.AskAnswer(domain.AskPrompt{}, parse(`{"action":"accept","content":{"answer":"free"}}`)); !a.Answered || a.Text != "free" {
		t.Errorf("AskAnswer(free text) = %+v", a)
	}
	if a := domain.AskAnswer(domain.AskPrompt{}, parse(`{"action":"cancel"}`)); a.Answered {
		t.Errorf("AskAnswer(cancel) = %+v", a)
	}
}

func TestArgumentsDigest(t *testing.T) {
	a, ok1 := domain.ArgumentsDigest(json.RawMessage(`{"b":1,"a":{"y":[1,2.50],"x":"é"}}`))
	b, ok2 := domain.ArgumentsDigest(json.RawMessage(` { "a" : { "x" : "\u00e9", "y" : [ 1 , 2.50 ] } , "b" : 1 } `))
	c, _ := domain.ArgumentsDigest(json.RawMessage(`{"b":1,"a":{"y":[1,2.5],"x":"é"}}`))
	if !ok1 || !ok2 || a != b {
		t.Error("equal arguments in another key order and spacing give different digests")
	}
	if a == c {
		t.Error("2.50 and 2.5 give the same digest; numbers must stay as written")
	}
	if _, ok := domain.ArgumentsDigest(json.RawMessage(`{"a":1} {}`)); ok {
		t.Error("trailing data accepted")
	}
}

func TestRounds(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	rounds := domain.NewRounds[int](0, rand.Reader)
	if rounds.Lifetime() != 30*time.Minute {
		t.Fatalf("default lifetime = %v", rounds.Lifetime())
	}
	d, _ := domain.ArgumentsDigest(json.RawMessage(`{}`))
	bind := domain.RoundBinding{Principal: "alice", Tool: "write_file", ArgsDigest: d}
	tok, evicted, err := rounds.Park(bind, now, 1)
	if err != nil || len(tok) != 43 || evicted != nil {
		t.Fatalf("Park = %q %v %v", tok, evicted, err)
	}
	for _, other := range []domain.RoundBinding{
		{Principal: "mallory", Tool: "write_file", ArgsDigest: d},
		{Principal: "alice", Tool: "read_file", ArgsDigest: d},
		{Principal: "alice", Tool: "write_file"},
	} {
		if _, err := rounds.Take(tok, other, now); !errors.Is(err, domain.ErrUnknownRound) {
			t.Errorf("Take with binding %+v = %v, want ErrUnknownRound", other, err)
		}
	}
	if _, err := rounds.Take(tok+"x", bind, now); !errors.Is(err, domain.ErrUnknownRound) {
		t.Errorf("Take(tampered) = %v", err)
	}
	if v, err := rounds.Take(tok, bind, now.Add(29*time.Minute)); err != nil || v != 1 {
		t.Fatalf("Take after failed checks = %v, %v; a failed check must not use the round up", v, err)
	}
	if _, err := rounds.Take(tok, bind, now); !errors.Is(err, domain.ErrUnknownRound) {
		t.Errorf("second Take = %v, want ErrUnknownRound (single use)", err)
	}

	tok2, _, _ := rounds.Park(bind, now, 2)
	if _, err := rounds.Take(tok2, bind, now.Add(30*time.Minute)); !errors.Is(err, domain.ErrUnknownRound) {
		t.Errorf("Take at expiry = %v", err)
	}
	if got := rounds.Expire(now.Add(30 * time.Minute)); len(got) != 1 || got[0] != 2 {
		t.Errorf("Expire = %v, want [2]", got)
	}

	var tokens []string
	for i := range domain.MaxRoundsPerPrincipal {
		tok, evicted, err := rounds.Park(bind, now, i)
		if err != nil || evicted != nil {
			t.Fatalf("Park #%d: %v, evicted %v", i, err, evicted)
		}
		tokens = append(tokens, tok)
	}
	// At a principal's bound its oldest round makes room; another
	// principal's rounds are never touched.
	other := bind
	other.Principal = "bob"
	bobTok, _, _ := rounds.Park(other, now, 50)
	tok5, evicted, err := rounds.Park(bind, now, 99)
	if err != nil || len(evicted) != 1 || evicted[0] != 0 {
		t.Errorf("5th round of one principal = %v, evicted %v; want its oldest (0) evicted", err, evicted)
	}
	if _, err := rounds.Take(tokens[0], bind, now); !errors.Is(err, domain.ErrUnknownRound) {
		t.Errorf("the evicted round still resumes: %v", err)
	}
	for _, tk := range append(tokens[1:], tok5) {
		if _, err := rounds.Take(tk, bind, now); err != nil {
			t.Errorf("a newer round of the principal was lost: %v", err)
		}
	}
	if v, err := rounds.Take(bobTok, other, now); err != nil || v != 50 {
		t.Errorf("another principal's round was touched: %v %v", v, err)
	}
	for i := range domain.MaxRoundsPerPrincipal {
		if _, _, err := rounds.Park(bind, now, i); err != nil {
			t.Fatalf("Park #%d: %v", i, err)
		}
	}
	for i := domain.MaxRoundsPerPrincipal; i < domain.MaxRoundsPerHost; i++ {
		b := bind
		b.Principal = "p" + string(rune('A'+i%26)) + string(rune('a'+i/26))
		if _, _, err := rounds.Park(b, now, i); err != nil {
			t.Fatalf("Park #%d: %v", i, err)
		}
	}
	if _, ev, err := rounds.Park(domain.RoundBinding{Principal: "new"}, now, 0); !errors.Is(err, domain.ErrRoundsFull) || ev != nil {
		t.Errorf("65th round = %v (evicted %v), want ErrRoundsFull", err, ev)
	}
	if _, ev, err := rounds.Park(bind, now, 7); err != nil || len(ev) != 1 {
		t.Errorf("a principal at its bound on a full host = %v (evicted %v), want its oldest evicted to make room", err, ev)
	}
	if _, _, err := domain.NewRounds[int](0, bytes.NewReader(nil)).Park(bind, now, 0); err == nil {
		t.Error("Park with a failing random source succeeded")
	}
	if n := len(rounds.Drain()); n != domain.MaxRoundsPerHost || rounds.Len() != 0 {
		t.Errorf("Drain returned %d, left %d", n, rounds.Len())
	}
}
