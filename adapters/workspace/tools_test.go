package workspace_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/ports/porttest"
)

type listResult struct {
	Path    string `json:"path"`
	Entries []struct {
		Name string `json:"name"`
		Type string `json:"type"`
		Size *int64 `json:"size"`
	} `json:"entries"`
	Truncated bool `json:"truncated"`
}

type readResult struct {
	Path     string `json:"path"`
	Size     int    `json:"size"`
	Encoding string `json:"encoding"`
	Content  string `json:"content"`
}

type searchResult struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Matches []struct {
		Path string `json:"path"`
		Line int    `json:"line"`
		Text string `json:"text"`
		Cut  bool   `json:"cut"`
	} `json:"matches"`
	Truncated     bool `json:"truncated"`
	FilesSearched int  `json:"filesSearched"`
	FilesSkipped  int  `json:"filesSkipped"`
}

func (r searchResult) lines() []string {
	var out []string
	for _, m := range r.Matches {
		out = append(out, fmt.Sprintf("%s:%d:%s", m.Path, m.Line, m.Text))
	}
	return out
}

type writeResult struct {
	Path    string `json:"path"`
	Bytes   int    `json:"bytes"`
	Created bool   `json:"created"`
	Kept    bool   `json:"kept"`
	SHA256  string `json:"sha256"`
}

func TestListDir(t *testing.T) {
	s, root := newSession(t, map[string]string{
		"b.txt":       "bb",
		"a.txt":       "",
		"dir/c.txt":   "ccc",
		"dir/d/e.txt": "e",
	})
	if err := os.Symlink("dir", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}

	var res listResult
	succeed(t, invoke(t, s, "list_dir", `{"path":"."}`, nil), &res)
	var got []string
	for _, e := range res.Entries {
		size := "-"
		if e.Size != nil {
			size = fmt.Sprint(*e.Size)
		}
		got = append(got, e.Name+" "+e.Type+" "+size)
	}
	want := []string{"a.txt file 0", "b.txt file 2", "dir dir -", "link symlink -"}
	if !slices.Equal(got, want) || res.Path != "." || res.Truncated {
		t.Errorf("list_dir . = %q (path %q, truncated %v), want %q", got, res.Path, res.Truncated, want)
	}

	succeed(t, invoke(t, s, "list_dir", `{"path":"dir/./d/../"}`, nil), &res)
	if res.Path != "dir" || len(res.Entries) != 2 {
		t.Errorf("list_dir dir/./d/../ = %+v", res)
	}
	succeed(t, invoke(t, s, "list_dir", `{"path":"link"}`, nil), &res) // a link inside the root is followed
	if len(res.Entries) != 2 {
		t.Errorf("list_dir link = %+v", res)
	}
	fail(t, invoke(t, s, "list_dir", `{"path":"b.txt"}`, nil), `"b.txt" is not a directory`)
	fail(t, invoke(t, s, "list_dir", `{"path":"nope"}`, nil), `"nope": no such file or directory`)
}

func TestListDirCap(t *testing.T) {
	n := 2*workspace.MaxListEntries + 7 // enough to trim while reading
	files := map[string]string{}
	var names []string
	for i := range n {
		name := fmt.Sprintf("e%05d", (i*7919)%n) // not created in name order
		files["big/"+name] = ""
		names = append(names, name)
	}
	slices.Sort(names)
	s, _ := newSession(t, files)

	var res listResult
	succeed(t, invoke(t, s, "list_dir", `{"path":"big"}`, nil), &res)
	if !res.Truncated || len(res.Entries) != workspace.MaxListEntries {
		t.Fatalf("list_dir of %d entries: %d entries, truncated %v; want %d, true", n, len(res.Entries), res.Truncated, workspace.MaxListEntries)
	}
	for i, e := range res.Entries {
		if e.Name != names[i] {
			t.Fatalf("entry %d = %s, want %s (the first %d names in order)", i, e.Name, names[i], workspace.MaxListEntries)
		}
	}
}

func TestReadFile(t *testing.T) {
	exact := strings.Repeat("x", workspace.MaxReadBytes)
	s, root := newSession(t, map[string]string{
		"hello.txt":   "hello <world> & \"you\"\n",
		"exact.txt":   exact,
		"over.txt":    exact + "y",
		"dir/sub.txt": "sub",
	})
	binary := []byte{0xff, 0x00, 0xfe, 'a'}
	if err := os.WriteFile(filepath.Join(root, "bin"), binary, 0o644); err != nil {
		t.Fatal(err)
	}

	var res readResult
	env := invoke(t, s, "read_file", `{"path":"hello.txt"}`, nil)
	succeed(t, env, &res)
	if res != (readResult{Path: "hello.txt", Size: 22, Encoding: "utf-8", Content: "hello <world> & \"you\"\n"}) {
		t.Errorf("read_file hello.txt = %+v", res)
	}
	if bytes.Contains(env.Result, []byte(`\u003c`)) {
		t.Errorf("result is HTML-escaped: %s", env.Result)
	}

	succeed(t, invoke(t, s, "read_file", `{"path":"bin"}`, nil), &res)
	if res.Encoding != "base64" || res.Content != base64.StdEncoding.EncodeToString(binary) || res.Size != 4 {
		t.Errorf("read_file bin = %+v", res)
	}

	succeed(t, invoke(t, s, "read_file", `{"path":"exact.txt"}`, nil), &res)
	if res.Size != workspace.MaxReadBytes || len(res.Content) != workspace.MaxReadBytes {
		t.Errorf("read_file of exactly 1 MiB: size %d, content %d bytes", res.Size, len(res.Content))
	}
	fail(t, invoke(t, s, "read_file", `{"path":"over.txt"}`, nil), `"over.txt" is 1048577 bytes: read_file reads files of at most 1048576 bytes (1 MiB)`)
	fail(t, invoke(t, s, "read_file", `{"path":"dir"}`, nil), `"dir" is a directory`)
	fail(t, invoke(t, s, "read_file", `{"path":"dir/missing"}`, nil), `"dir/missing": no such file or directory`)
}

func TestSearchText(t *testing.T) {
	s, root := newSession(t, map[string]string{
		"b.go":            "package b\n// TODO: b\r\nfunc B() {}\n",
		"a.txt":           "todo lower\nTODO upper\n",
		"sub/c.txt":       "x\ny\nTODO in sub\n",
		"sub/deeper/d.md": "TODO deep",
		".git/config":     "TODO in git",
		".hidden/e.txt":   "TODO hidden but searched",
		"bin.dat":         "TODO\x00binary",
		"big.txt":         "TODO\n" + strings.Repeat("z", workspace.MaxSearchFileBytes),
		"long.txt":        strings.Repeat("é", 200) + "TODO",
	})
	if err := os.Symlink("sub", filepath.Join(root, "zlink")); err != nil {
		t.Fatal(err)
	}

	var res searchResult
	succeed(t, invoke(t, s, "search_text", `{"pattern":"TODO"}`, nil), &res)
	want := []string{
		".hidden/e.txt:1:TODO hidden but searched",
		"a.txt:2:TODO upper",
		"b.go:2:// TODO: b",
		"long.txt:1:" + strings.Repeat("é", 128),
		"sub/c.txt:3:TODO in sub",
		"sub/deeper/d.md:1:TODO deep",
	}
	if got := res.lines(); !slices.Equal(got, want) {
		t.Errorf("matches:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if res.FilesSearched != 6 || res.FilesSkipped != 2 || res.Truncated || res.Path != "." || res.Pattern != "TODO" {
		t.Errorf("search summary = searched %d, skipped %d, truncated %v, path %q", res.FilesSearched, res.FilesSkipped, res.Truncated, res.Path)
	}
	for _, m := range res.Matches {
		if m.Cut != (m.Path == "long.txt") {
			t.Errorf("%s: cut = %v", m.Path, m.Cut)
		}
	}

	succeed(t, invoke(t, s, "search_text", `{"pattern":"(?i)^todo","path":"a.txt"}`, nil), &res)
	if got := res.lines(); !slices.Equal(got, []string{"a.txt:1:todo lower", "a.txt:2:TODO upper"}) {
		t.Errorf("case-insensitive search of one file = %q", got)
	}
	succeed(t, invoke(t, s, "search_text", `{"pattern":"TODO","path":"sub/"}`, nil), &res)
	if got := res.lines(); len(got) != 2 || res.Path != "sub" {
		t.Errorf("search of sub/ = %q (path %q)", got, res.Path)
	}
	succeed(t, invoke(t, s, "search_text", `{"pattern":"nothing here"}`, nil), &res)
	if res.Matches == nil || len(res.Matches) != 0 {
		t.Errorf("no matches = %#v, want an empty list", res.Matches)
	}
	fail(t, invoke(t, s, "search_text", `{"pattern":"x","path":"missing"}`, nil), `"missing": no such file or directory`)
}

func TestSearchTextCap(t *testing.T) {
	for _, tt := range []struct {
		lines     int // matching lines in all
		truncated bool
	}{
		{workspace.MaxMatches, false},
		{workspace.MaxMatches + 1, true},
		{3 * workspace.MaxMatches, true},
	} {
		t.Run(fmt.Sprint(tt.lines), func(t *testing.T) {
			s, _ := newSession(t, map[string]string{
				"a.txt": strings.Repeat("hit\n", tt.lines-1),
				"b.txt": "hit\n", // the last match is in another file
			})
			var res searchResult
			succeed(t, invoke(t, s, "search_text", `{"pattern":"hit"}`, nil), &res)
			wantMatches := min(tt.lines, workspace.MaxMatches)
			if len(res.Matches) != wantMatches || res.Truncated != tt.truncated {
				t.Errorf("%d matching lines: %d matches, truncated %v; want %d, %v", tt.lines, len(res.Matches), res.Truncated, wantMatches, tt.truncated)
			}
		})
	}
}

func TestSearchTextProgress(t *testing.T) {
	n := 2*workspace.ProgressEvery + workspace.ProgressEvery/2
	s, _ := newSession(t, manyFiles("many", n))
	rec := &porttest.Recorder{}
	var res searchResult
	succeed(t, invoke(t, s, "search_text", `{"pattern":"needle"}`, rec), &res)
	if len(res.Matches) != n {
		t.Errorf("%d matches, want %d", len(res.Matches), n)
	}
	want := []float64{workspace.ProgressEvery, 2 * workspace.ProgressEvery}
	if got := rec.ProgressReports(); !slices.Equal(got, want) {
		t.Errorf("progress reports %v, want %v", got, want)
	}
}

func TestSearchTextCancellation(t *testing.T) {
	s, _ := newSession(t, manyFiles("many", 3*workspace.ProgressEvery))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rec := &porttest.Recorder{OnProgress: func(context.Context) { cancel() }}
	fail(t, invokeCtx(t, ctx, s, "search_text", `{"pattern":"needle"}`, rec), "search_text was cancelled")
	if got := rec.ProgressReports(); len(got) != 1 {
		t.Errorf("progress reports after cancellation: %v, want the one that cancelled", got)
	}
}

// countdownCtx reports itself cancelled after its Err has been asked n
// times: a way to cancel a search in the middle of one file.
type countdownCtx struct {
	context.Context
	mu sync.Mutex
	n  int
}

func (c *countdownCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// TestSearchTextCancellationWithinAFile: the search checks for
// cancellation between lines, not only between files, so a big file under
// a costly pattern cannot hold the call after its client gave up.
func TestSearchTextCancellationWithinAFile(t *testing.T) {
	s, _ := newSession(t, map[string]string{"big.txt": strings.Repeat("x\n", 50_000)})
	ctx := &countdownCtx{Context: t.Context(), n: 100}
	fail(t, invokeCtx(t, ctx, s, "search_text", `{"pattern":"y"}`, nil), "search_text was cancelled")
}

// TestSearchTextRefusesCostlyPatterns: a short pattern that compiles to a
// huge program is refused before anything is read.
func TestSearchTextRefusesCostlyPatterns(t *testing.T) {
	s, _ := newSession(t, map[string]string{"f.txt": "abc"})
	fail(t, invoke(t, s, "search_text", `{"pattern":"`+strings.Repeat("(.*){1000}", 101)+`c"}`, nil), "pattern is too complex")
	fail(t, invoke(t, s, "search_text", `{"pattern":"(.*){300}c"}`, nil), "pattern is too complex")
	var res struct{ FilesSearched int }
	succeed(t, invoke(t, s, "search_text", `{"pattern":"(.*){100}c"}`, nil), &res)
	if res.FilesSearched != 1 {
		t.Errorf("a pattern within the bound searched %d files", res.FilesSearched)
	}
}

func TestWriteFile(t *testing.T) {
	s, root := newSession(t, map[string]string{"old.txt": "old content", "dir/x": ""})
	if err := os.Chmod(filepath.Join(root, "old.txt"), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("create", func(t *testing.T) {
		rec := &porttest.Recorder{Allow: true}
		var res writeResult
		succeed(t, invoke(t, s, "write_file", `{"path":"dir/new.txt","content":"new\n"}`, rec), &res)
		sum := sha256.Sum256([]byte("new\n"))
		if res != (writeResult{Path: "dir/new.txt", Bytes: 4, Created: true, SHA256: hex.EncodeToString(sum[:])}) {
			t.Errorf("result = %+v", res)
		}
		if b, err := os.ReadFile(filepath.Join(root, "dir", "new.txt")); err != nil || string(b) != "new\n" {
			t.Errorf("file holds %q, %v", b, err)
		}
		perms, asks := rec.Requests()
		want := domain.PermissionPrompt{
			Tool:    "write_file",
			Summary: "Create a file in the workspace",
			Arguments: []domain.Argument{
				{Name: "path", Value: "dir/new.txt", Path: true},
				{Name: "content", Value: "new\n", Contents: true},
			},
		}
		if len(perms) != 1 || len(asks) != 0 || fmt.Sprintf("%+v", perms[0]) != fmt.Sprintf("%+v", want) {
			t.Errorf("prompts = %+v, %+v; want one %+v", perms, asks, want)
		}
	})

	t.Run("replace keeps the mode", func(t *testing.T) {
		rec := &porttest.Recorder{Allow: true, Answer: answer(workspace.OverwriteAnswer)}
		var res writeResult
		succeed(t, invoke(t, s, "write_file", `{"path":"old.txt","content":"replaced"}`, rec), &res)
		if res.Created {
			t.Error("replacing reported created")
		}
		st, err := os.Stat(filepath.Join(root, "old.txt"))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("mode after replace = %v, %v; want 0600", st.Mode(), err)
		}
		perms, asks := rec.Requests()
		if len(perms) != 1 || perms[0].Summary != "Replace a file of 11 bytes in the workspace" {
			t.Errorf("prompt = %+v", perms)
		}
		if len(asks) != 1 || fmt.Sprint(asks[0].Options) != "[overwrite keep]" || !strings.Contains(asks[0].Question, "old.txt") {
			t.Errorf("asks = %+v, want the overwrite-or-keep choice", asks)
		}
	})

	t.Run("keep or no answer leaves the file", func(t *testing.T) {
		before, _ := os.ReadFile(filepath.Join(root, "old.txt"))
		var res writeResult
		succeed(t, invoke(t, s, "write_file", `{"path":"old.txt","content":"kept?"}`, &porttest.Recorder{Allow: true, Answer: answer(workspace.KeepAnswer)}), &res)
		if !res.Kept || res.Bytes != 0 {
			t.Errorf("keep: %+v", res)
		}
		fail(t, invoke(t, s, "write_file", `{"path":"old.txt","content":"kept?"}`, &porttest.Recorder{Allow: true}), `"old.txt" was not overwritten: no answer whether to overwrite it or keep it`)
		fail(t, invoke(t, s, "write_file", `{"path":"old.txt","content":"kept?"}`, &porttest.Recorder{Allow: true, Answer: answer("delete")}), "")
		if after, _ := os.ReadFile(filepath.Join(root, "old.txt")); string(after) != string(before) {
			t.Errorf("old.txt changed from %q to %q", before, after)
		}
	})

	t.Run("denied writes nothing", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			caller *porttest.Recorder
		}{{"deny", &porttest.Recorder{}}, {"deny, new file", &porttest.Recorder{}}} {
			path := "old.txt"
			if strings.Contains(c.name, "new") {
				path = "denied.txt"
			}
			fail(t, invoke(t, s, "write_file", `{"path":"`+path+`","content":"evil"}`, c.caller), `Permission denied: writing "`+path+`" was not allowed`)
		}
		// A closed Caller: the refusal says what would let the write through.
		fail(t, invoke(t, s, "write_file", `{"path":"closed.txt","content":"evil"}`, nil), "Permission denied")
		fail(t, invoke(t, s, "write_file", `{"path":"closed.txt","content":"evil"}`, nil), "--ask-client")
		fail(t, invoke(t, s, "write_file", `{"path":"closed.txt","content":"evil"}`, nil), "2026-07-28 client")
		if b, _ := os.ReadFile(filepath.Join(root, "old.txt")); string(b) != "replaced" {
			t.Errorf("denied write changed old.txt to %q", b)
		}
		for _, name := range []string{"denied.txt", "closed.txt"} {
			if _, err := os.Lstat(filepath.Join(root, name)); err == nil {
				t.Errorf("denied write created %s", name)
			}
		}
	})

	t.Run("refused before asking", func(t *testing.T) {
		if err := os.Symlink("old.txt", filepath.Join(root, "link")); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct{ args, want string }{
			{`{"path":"nodir/a.txt","content":"x"}`, `directory "nodir": no such file or directory (write_file creates no directories)`},
			{`{"path":"old.txt/a.txt","content":"x"}`, `"old.txt" is not a directory`},
			{`{"path":"dir","content":"x"}`, `"dir" is a directory`},
			{`{"path":"link","content":"x"}`, `"link" is a symbolic link: write_file does not replace links`},
			{`{"path":"big.txt","content":"` + strings.Repeat("x", workspace.MaxWriteBytes+1) + `"}`, "content is 1048577 bytes: write_file writes at most 1048576 bytes (1 MiB)"},
		} {
			rec := &porttest.Recorder{Allow: true}
			fail(t, invoke(t, s, "write_file", tt.args, rec), tt.want)
			if p := rec.Prompts(); len(p) > 0 {
				t.Errorf("%.60s: asked %v for a write that cannot happen", tt.args, p)
			}
		}
		var res writeResult
		succeed(t, invoke(t, s, "write_file", `{"path":"exact.txt","content":"`+strings.Repeat("x", workspace.MaxWriteBytes)+`"}`, &porttest.Recorder{Allow: true}), &res)
		if res.Bytes != workspace.MaxWriteBytes {
			t.Errorf("wrote %d bytes, want exactly 1 MiB", res.Bytes)
		}
	})

	t.Run("cancelled while asking", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		c := allowAfter{func() { cancel() }}
		fail(t, invokeCtx(t, ctx, s, "write_file", `{"path":"late.txt","content":"x"}`, c), "write_file was cancelled")
		if _, err := os.Lstat(filepath.Join(root, "late.txt")); err == nil {
			t.Error("a write cancelled during its permission prompt happened")
		}
	})

	entries, _ := os.ReadDir(filepath.Join(root, "dir"))
	entries2, _ := os.ReadDir(root)
	for _, e := range append(entries, entries2...) {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

// allowAfter is a Caller that runs its function inside RequestPermission and
// then allows, whatever the ctx says: it stands for a client whose approval
// arrives as the call is being cancelled, or for someone changing the tree
// while the user decides.
type allowAfter struct{ during func() }

func (c allowAfter) RequestPermission(context.Context, domain.PermissionPrompt) domain.Decision {
	c.during()
	return domain.AllowOnce
}
func (allowAfter) Ask(context.Context, domain.AskPrompt) domain.Answer { return domain.Answer{} }
func (allowAfter) Progress(context.Context, float64, float64, string)  {}
func (allowAfter) Principal() ports.Principal                          { return ports.Principal{} }

// answer returns a Recorder.Answer that picks text.
func answer(text string) func(domain.AskPrompt) domain.Answer {
	return func(domain.AskPrompt) domain.Answer { return domain.Answer{Text: text, Answered: true} }
}

// TestWriteFileDialogShowsTheFile: the dialog the engine renders for a
// write to a deep path shows the name of the file the write lands in —
// the permission prompt and, for an existing file, the overwrite question
// (docs/SPEC.md §6 "Forms"; a dialog cut to the path's first 200
// characters hid it).
func TestWriteFileDialogShowsTheFile(t *testing.T) {
	deep := strings.Repeat("a-rather-long-directory/", 11) + "the-file-approved.txt"
	s, _ := newSession(t, map[string]string{deep: "old"})
	rec := &porttest.Recorder{Allow: true, Answer: answer(workspace.OverwriteAnswer)}
	var res writeResult
	succeed(t, invoke(t, s, "write_file", `{"path":"`+deep+`","content":"new"}`, rec), &res)
	perms, asks := rec.Requests()
	if len(perms) != 1 || len(asks) != 1 {
		t.Fatalf("prompts = %+v, %+v; want one permission prompt and one question", perms, asks)
	}
	if msg := domain.PermissionForm(perms[0]).Message; !strings.Contains(msg, `directory/the-file-approved.txt"`) {
		t.Errorf("the permission dialog hides the file:\n%s", msg)
	}
	if f, _ := domain.AskForm(asks[0]); !strings.Contains(f.Message, "the-file-approved.txt. Overwrite it or keep it?") {
		t.Errorf("the overwrite question hides the file:\n%s", f.Message)
	}
}
