package workspace_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unicode/utf8"
)

// TestNamesNotUTF8 puts names that are not UTF-8 (a Latin-1 file name, a
// directory "\xff" holding a file) beside names that hold what a lossy
// listing would show for them (U+FFFD) literally. The tools report only
// names a client can hand back: the others are left out and counted, and
// every name reported reads the file it names.
func TestNamesNotUTF8(t *testing.T) {
	s, root := newSession(t, map[string]string{
		"caf\uFFFD.txt":        "needle replacement char\n", // valid UTF-8: what a lossy listing shows for the next one
		"plain.txt":            "needle plain\n",
		"d/\uFFFD/x.txt":       "needle under replacement dir\n",
		"d/caf%E9.txt":         "needle percent\n", // what an escape could look like: a real name, not an escape
		"d/back\\xff.txt":      "needle backslash\n",
		"d/ok/y.txt":           "needle ok\n",
		"d/d\u00e9j\u00e0.txt": "needle accents\n",
	})
	for name, content := range map[string]string{
		"caf\xe9.txt":   "needle LATIN1 file\n",
		"d/\xff/x.txt":  "needle BAD dir\n",
		"d/ok/\xfe.txt": "needle BAD file\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Skipf("this file system refuses names that are not UTF-8: %v", err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Skipf("this file system refuses names that are not UTF-8: %v", err)
		}
	}

	// Listing: only names that are valid UTF-8, each once, and a count of
	// the others.
	for dir, want := range map[string]struct {
		names   []string
		skipped int
	}{
		".":    {[]string{"caf\uFFFD.txt", "d", "plain.txt"}, 1},
		"d":    {[]string{"back\\xff.txt", "caf%E9.txt", "d\u00e9j\u00e0.txt", "ok", "\uFFFD"}, 1},
		"d/ok": {[]string{"y.txt"}, 1},
	} {
		var res struct {
			listResult
			Skipped *int `json:"skipped"`
		}
		succeed(t, invoke(t, s, "list_dir", `{"path":`+quote(dir)+`}`, nil), &res)
		var names []string
		for _, e := range res.Entries {
			names = append(names, e.Name)
		}
		if !slices.Equal(names, want.names) {
			t.Errorf("list_dir %q = %q, want %q", dir, names, want.names)
		}
		if res.Skipped == nil || *res.Skipped != want.skipped {
			t.Errorf("list_dir %q: skipped = %v, want %d", dir, res.Skipped, want.skipped)
		}
		// Every name listed is usable, and names the file listed.
		for _, e := range res.Entries {
			p := dir + "/" + e.Name
			if e.Type == "dir" {
				if env := invoke(t, s, "list_dir", `{"path":`+quote(p)+`}`, nil); !env.Success {
					t.Errorf("list_dir of the listed %q: %s", p, env.Error)
				}
				continue
			}
			var read readResult
			succeed(t, invoke(t, s, "read_file", `{"path":`+quote(p)+`}`, nil), &read)
			want, _ := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
			if read.Content != string(want) {
				t.Errorf("read_file of the listed %q = %q, want %q", p, read.Content, want)
			}
		}
	}

	// Searching: what is not UTF-8 is not searched (not even entered) and
	// is counted; every path reported is a name a client can hand back.
	var res searchResult
	succeed(t, invoke(t, s, "search_text", `{"pattern":"needle"}`, nil), &res)
	want := []string{
		"caf\uFFFD.txt:1:needle replacement char",
		"d/back\\xff.txt:1:needle backslash",
		"d/caf%E9.txt:1:needle percent",
		"d/d\u00e9j\u00e0.txt:1:needle accents",
		"d/ok/y.txt:1:needle ok",
		"d/\uFFFD/x.txt:1:needle under replacement dir",
		"plain.txt:1:needle plain",
	}
	if got := res.lines(); !slices.Equal(got, want) {
		t.Errorf("search_text found\n%q\nwant\n%q", got, want)
	}
	if res.FilesSearched != len(want) || res.FilesSkipped != 3 {
		t.Errorf("search_text searched %d, skipped %d; want %d, 3 (two files and a directory whose names are not UTF-8)", res.FilesSearched, res.FilesSkipped, len(want))
	}
	for _, m := range res.Matches {
		if !utf8.ValidString(m.Path) {
			t.Errorf("reported path %q is not UTF-8", m.Path)
		}
	}

	// Writing a listed name writes that file, not the one a lossy listing
	// would have confused it with.
	var wr writeResult
	succeed(t, invoke(t, s, "write_file", `{"path":"caf\uFFFD.txt","content":"new"}`, overwriteAfter{allowAfter{func() {}}}), &wr)
	if b, _ := os.ReadFile(filepath.Join(root, "caf\xe9.txt")); string(b) != "needle LATIN1 file\n" {
		t.Errorf("the Latin-1 file now holds %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "caf\uFFFD.txt")); string(b) != "new" {
		t.Errorf("the file named with U+FFFD holds %q", b)
	}
}
