package workspace_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/ports/porttest"
)

// outsideTree is a directory beside the root whose content must never be
// read or written by a session: every file holds "SECRET".
func outsideTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"secret.txt":    "needle SECRET\n",
		"1.txt":         "needle SECRET 1\n",
		"2.txt":         "needle SECRET 2\n",
		"deeper/3.txt":  "needle SECRET 3\n",
		"deeper/4.txt":  "needle SECRET 4\n",
		"sub/other.txt": "needle SECRET sub\n",
	})
	return dir
}

// outsideNames lists everything under dir, to show nothing was added.
func outsideNames(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, p)
		return nil
	})
	return names
}

func TestPathEscapes(t *testing.T) {
	outside := outsideTree(t)
	before := outsideNames(t, outside)
	s, root := newSession(t, map[string]string{"in/ok.txt": "needle inside\n"})
	relOutside, err := filepath.Rel(root, outside)
	if err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"abs":      outside,                               // absolute, out
		"rel":      relOutside,                            // relative, out
		"absfile":  filepath.Join(outside, "secret.txt"),  // a file, out
		"chain":    "abs",                                 // inside, to a link out
		"in/up":    "..",                                  // inside: the root itself
		"in/upup":  "../..",                               // out, one level
		"in/trick": filepath.Join("..", "in", "..", ".."), // out, through inside names
	} {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	escapes := []string{
		"..", "../x", "in/../../x", "/etc/passwd", outside, filepath.Join(outside, "secret.txt"),
		"abs", "abs/secret.txt", "rel", "rel/secret.txt", "absfile", "chain", "chain/secret.txt",
		"in/upup", "in/trick", "in/up/abs/secret.txt",
		"in/upup/" + filepath.Base(outside) + "/secret.txt",
	}
	allow := &porttest.Recorder{Allow: true}
	for _, p := range escapes {
		for _, call := range []struct{ tool, args string }{
			{"read_file", `{"path":` + quote(p) + `}`},
			{"list_dir", `{"path":` + quote(p) + `}`},
			{"search_text", `{"pattern":"needle","path":` + quote(p) + `}`},
			{"write_file", `{"path":` + quote(p+"/new.txt") + `,"content":"x"}`},
			{"write_file", `{"path":` + quote(p) + `,"content":"x"}`},
		} {
			env := invoke(t, s, call.tool, call.args, allow)
			if env.Success {
				t.Errorf("%s %s succeeded: %s", call.tool, call.args, env.Result)
				continue
			}
			if strings.Contains(env.Error, "SECRET") || (strings.Contains(env.Error, outside) && !strings.Contains(call.args, outside)) {
				t.Errorf("%s %s: error shows the outside: %q", call.tool, call.args, env.Error)
			}
		}
	}

	// The whole tree: links are not followed, so nothing outside is seen.
	var res searchResult
	succeed(t, invoke(t, s, "search_text", `{"pattern":"needle"}`, nil), &res)
	if got := res.lines(); !slices.Equal(got, []string{"in/ok.txt:1:needle inside"}) {
		t.Errorf("search of the root = %q", got)
	}
	// A link that stays inside is followed.
	var read readResult
	succeed(t, invoke(t, s, "read_file", `{"path":"in/up/in/ok.txt"}`, nil), &read)
	if read.Content != "needle inside\n" {
		t.Errorf("read through an inside link = %q", read.Content)
	}
	fail(t, invoke(t, s, "read_file", `{"path":"abs/secret.txt"}`, nil), `"abs/secret.txt": leads outside the workspace root`)
	fail(t, invoke(t, s, "read_file", `{"path":"/etc/passwd"}`, nil), `path "/etc/passwd" is absolute: paths are relative to the workspace root`)
	fail(t, invoke(t, s, "read_file", `{"path":"in/../../x"}`, nil), `path "in/../../x" escapes the workspace root`)

	if after := outsideNames(t, outside); !slices.Equal(before, after) {
		t.Errorf("the outside directory changed:\nbefore %q\nafter  %q", before, after)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestSearchTextSymlinkRace swaps a directory the walk has already listed for
// a link leading outside, at the moment search_text is about to open a file
// or a subdirectory in it: the walk must not read outside.
func TestSearchTextSymlinkRace(t *testing.T) {
	for _, trigger := range []string{"sub/2.txt", "sub/deeper"} {
		for _, kind := range []string{"absolute", "relative"} {
			t.Run(trigger+" "+kind, func(t *testing.T) {
				outside := outsideTree(t)
				s, root := newSession(t, map[string]string{
					"a.txt":            "needle a\n",
					"sub/1.txt":        "needle sub 1\n",
					"sub/2.txt":        "needle sub 2\n",
					"sub/deeper/3.txt": "needle sub 3\n",
				})
				target := outside
				if kind == "relative" {
					target, _ = filepath.Rel(root, outside)
				}
				var once sync.Once
				swapped := false
				workspace.SetBeforeOpen(s, func(rel string) {
					if rel != trigger {
						return
					}
					once.Do(func() {
						if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "sub.moved")); err != nil {
							t.Error(err)
						}
						if err := os.Symlink(target, filepath.Join(root, "sub")); err != nil {
							t.Error(err)
						}
						swapped = true
					})
				})

				var res searchResult
				succeed(t, invoke(t, s, "search_text", `{"pattern":"needle"}`, nil), &res)
				if !swapped {
					t.Fatalf("the walk never opened %s: the race was not staged", trigger)
				}
				for _, line := range res.lines() {
					if strings.Contains(line, "SECRET") {
						t.Errorf("search_text read outside the root: %s", line)
					}
				}
				if got := res.lines(); len(got) < 2 || got[0] != "a.txt:1:needle a" || got[1] != "sub/1.txt:1:needle sub 1" {
					t.Errorf("matches before the swap = %q", got)
				}
				if res.FilesSkipped == 0 {
					t.Errorf("nothing skipped after the swap: %+v", res)
				}
			})
		}
	}
}

// TestReadAfterListSymlinkSwap lists a directory, swaps it for a link leading
// outside, then reads a file it listed: the read must fail.
func TestReadAfterListSymlinkSwap(t *testing.T) {
	outside := outsideTree(t)
	s, root := newSession(t, map[string]string{"sub/secret.txt": "inside\n"})
	var list listResult
	succeed(t, invoke(t, s, "list_dir", `{"path":"sub"}`, nil), &list)
	if len(list.Entries) != 1 || list.Entries[0].Name != "secret.txt" {
		t.Fatalf("list_dir sub = %+v", list)
	}
	if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "sub.moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "sub")); err != nil {
		t.Fatal(err)
	}
	fail(t, invoke(t, s, "read_file", `{"path":"sub/secret.txt"}`, nil), "leads outside the workspace root")
}

// TestWriteFileSymlinkRace swaps the target's directory for a link leading
// outside while the user is deciding: the allowed write must fail, and write
// nothing anywhere.
func TestWriteFileSymlinkRace(t *testing.T) {
	for _, kind := range []string{"absolute", "relative"} {
		t.Run(kind, func(t *testing.T) {
			outside := outsideTree(t)
			before := outsideNames(t, outside)
			s, root := newSession(t, map[string]string{"sub/keep.txt": "keep\n"})
			target := outside
			if kind == "relative" {
				target, _ = filepath.Rel(root, outside)
			}
			swap := allowAfter{func() {
				if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "sub.moved")); err != nil {
					t.Error(err)
				}
				if err := os.Symlink(target, filepath.Join(root, "sub")); err != nil {
					t.Error(err)
				}
			}}
			fail(t, invoke(t, s, "write_file", `{"path":"sub/new.txt","content":"x"}`, swap), "leads outside the workspace root")
			if after := outsideNames(t, outside); !slices.Equal(before, after) {
				t.Errorf("the outside directory changed:\nbefore %q\nafter  %q", before, after)
			}
			if names := outsideNames(t, filepath.Join(root, "sub.moved")); len(names) != 2 {
				t.Errorf("the moved directory holds %q, want only keep.txt", names)
			}
		})
	}
}

// TestWriteFileDoesNotReplaceAFileThatAppeared: the approval was for
// creating a file; one created by someone else while the user decided is
// not overwritten (the overwrite question was never asked).
func TestWriteFileDoesNotReplaceAFileThatAppeared(t *testing.T) {
	s, root := newSession(t, map[string]string{"dir/keep.txt": ""})
	target := filepath.Join(root, "dir", "race.txt")
	appear := allowAfter{func() {
		if err := os.WriteFile(target, []byte("IMPORTANT"), 0o644); err != nil {
			t.Error(err)
		}
	}}
	fail(t, invoke(t, s, "write_file", `{"path":"dir/race.txt","content":"first"}`, appear), `"dir/race.txt" appeared after write_file checked it and was not overwritten`)
	if b, _ := os.ReadFile(target); string(b) != "IMPORTANT" {
		t.Errorf("the file that appeared now holds %q", b)
	}
	if names := outsideNames(t, filepath.Join(root, "dir")); len(names) != 3 {
		t.Errorf("dir holds %q, want itself, keep.txt and race.txt only (no temporary file left)", names)
	}
}

// TestWriteFileRefusesLinksInItsPath: a link that stays inside the root
// still redirects a write away from the path the user approved, so
// write_file refuses links anywhere in its path.
func TestWriteFileRefusesLinksInItsPath(t *testing.T) {
	s, root := newSession(t, map[string]string{"hooks/keep": "", "sub/keep": ""})
	if err := os.Symlink("../hooks", filepath.Join(root, "sub", "notes")); err != nil {
		t.Fatal(err)
	}
	rec := &porttest.Recorder{Allow: true}
	fail(t, invoke(t, s, "write_file", `{"path":"sub/notes/x.txt","content":"x"}`, rec), `"sub/notes" is a symbolic link: write_file does not write through links`)
	if perms, _ := rec.Requests(); len(perms) != 0 {
		t.Errorf("asked %d times; a write that cannot happen is refused before asking", len(perms))
	}
	if _, err := os.Lstat(filepath.Join(root, "hooks", "x.txt")); err == nil {
		t.Error("the write landed through the link")
	}
}
