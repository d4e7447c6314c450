package workspace_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/domain"
)

// overwriteAfter is allowAfter that also answers "overwrite" when asked
// whether to replace an existing file.
type overwriteAfter struct{ allowAfter }

func (overwriteAfter) Ask(context.Context, domain.AskPrompt) domain.Answer {
	return domain.Answer{Text: workspace.OverwriteAnswer, Answered: true}
}

// treeNames lists every name under root (slash-separated, relative), links
// not followed.
func treeNames(t *testing.T, root string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestWriteFileLandsWhereApproved changes the approved path while the
// permission dialog is open: a directory on it swapped for a link (to
// another directory of the root, or to the very directory, moved), or for a
// new directory, or the target itself replaced by a link or a directory.
// The write must fail, say that the path changed, and write nothing
// anywhere.
func TestWriteFileLandsWhereApproved(t *testing.T) {
	mustDo := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Error(err)
		}
	}
	for _, tt := range []struct {
		name   string
		path   string // written
		during func(t *testing.T, root string)
		want   string // in the error
	}{{
		name: "a/b becomes a link to .git/hooks",
		path: "a/b/file",
		during: func(t *testing.T, root string) {
			mustDo(t, os.Rename(filepath.Join(root, "a", "b"), filepath.Join(root, "a", "b.old")))
			mustDo(t, os.Symlink(filepath.Join("..", ".git", "hooks"), filepath.Join(root, "a", "b")))
		},
		want: `"a/b" changed while permission was pending`,
	}, {
		name: "a/b becomes an absolute link to .git/hooks",
		path: "a/b/file",
		during: func(t *testing.T, root string) {
			mustDo(t, os.Rename(filepath.Join(root, "a", "b"), filepath.Join(root, "a", "b.old")))
			mustDo(t, os.Symlink(filepath.Join(root, ".git", "hooks"), filepath.Join(root, "a", "b")))
		},
		want: `"a/b" changed while permission was pending`,
	}, {
		name: "a becomes a link to another tree with a b",
		path: "a/b/file",
		during: func(t *testing.T, root string) {
			mustDo(t, os.Rename(filepath.Join(root, "a"), filepath.Join(root, "a.old")))
			mustDo(t, os.Symlink("x", filepath.Join(root, "a")))
		},
		want: `"a" changed while permission was pending`,
	}, {
		name: "a/b becomes a link to itself, moved",
		path: "a/b/file",
		during: func(t *testing.T, root string) {
			mustDo(t, os.Rename(filepath.Join(root, "a", "b"), filepath.Join(root, "a", "b.old")))
			mustDo(t, os.Symlink("b.old", filepath.Join(root, "a", "b")))
		},
		want: `"a/b" changed while permission was pending`,
	}, {
		name: "a/b replaced by a new directory",
		path: "a/b/file",
		during: func(t *testing.T, root string) {
			mustDo(t, os.Rename(filepath.Join(root, "a", "b"), filepath.Join(root, "a", "b.old")))
			mustDo(t, os.Mkdir(filepath.Join(root, "a", "b"), 0o755))
		},
		want: `"a/b" changed while permission was pending`,
	}, {
		name: "a/b removed",
		path: "a/b/file",
		during: func(t *testing.T, root string) {
			mustDo(t, os.Rename(filepath.Join(root, "a", "b"), filepath.Join(root, "a", "b.old")))
		},
		want: `"a/b" changed while permission was pending`,
	}, {
		name: "a/b becomes a link outside the root",
		path: "a/b/file",
		during: func(t *testing.T, root string) {
			mustDo(t, os.Rename(filepath.Join(root, "a", "b"), filepath.Join(root, "a", "b.old")))
			mustDo(t, os.Symlink(filepath.Join(root, "..", filepath.Base(root)+".outside"), filepath.Join(root, "a", "b")))
		},
		want: `"a/b" changed while permission was pending`,
	}, {
		name: "the new file becomes a link into .git/hooks",
		path: "a/b/file",
		during: func(t *testing.T, root string) {
			mustDo(t, os.Symlink(filepath.Join("..", "..", ".git", "hooks", "file"), filepath.Join(root, "a", "b", "file")))
		},
		want: `"a/b/file" `,
	}, {
		name: "the replaced file becomes a link into .git/hooks",
		path: "a/b/keep",
		during: func(t *testing.T, root string) {
			mustDo(t, os.Remove(filepath.Join(root, "a", "b", "keep")))
			mustDo(t, os.Symlink(filepath.Join("..", "..", ".git", "hooks", "keep"), filepath.Join(root, "a", "b", "keep")))
		},
		want: `"a/b/keep" changed while permission was pending`,
	}, {
		name: "the replaced file becomes a directory",
		path: "a/b/keep",
		during: func(t *testing.T, root string) {
			mustDo(t, os.Remove(filepath.Join(root, "a", "b", "keep")))
			mustDo(t, os.Mkdir(filepath.Join(root, "a", "b", "keep"), 0o755))
		},
		want: `"a/b/keep" changed while permission was pending`,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			s, root := newSession(t, map[string]string{
				"a/b/keep":        "keep",
				".git/hooks/keep": "hook",
				"x/b/keep":        "x",
			})
			outside := root + ".outside"
			mustDo(t, os.Mkdir(outside, 0o755))
			t.Cleanup(func() { os.RemoveAll(outside) })

			var after []string
			c := overwriteAfter{allowAfter{func() {
				tt.during(t, root)
				after = treeNames(t, root)
			}}}
			env := invoke(t, s, "write_file", `{"path":`+quote(tt.path)+`,"content":"WRITTEN"}`, c)
			if env.Success { // not fatal: say where it landed
				t.Errorf("the write succeeded: %s", env.Result)
			} else {
				fail(t, env, tt.want)
				t.Log(env.Error)
			}
			if now := treeNames(t, root); !slices.Equal(now, after) {
				t.Errorf("the tree changed after the dialog:\nbefore %q\nafter  %q", after, now)
			}
			if names := treeNames(t, outside); len(names) != 1 {
				t.Errorf("written outside the root: %q", names)
			}
			filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					if b, _ := os.ReadFile(p); strings.Contains(string(b), "WRITTEN") {
						rel, _ := filepath.Rel(root, p)
						t.Errorf("written at %s", filepath.ToSlash(rel))
					}
				}
				return nil
			})
		})
	}
}

// TestWriteFileThroughCheckedDirectories: the normal path (nothing changes
// during the dialog) still writes, at every depth, creating and replacing.
func TestWriteFileThroughCheckedDirectories(t *testing.T) {
	s, root := newSession(t, map[string]string{"top.txt": "old", "a/b/c/deep.txt": "old", "a/b/c/d/keep": ""})
	nothing := overwriteAfter{allowAfter{func() {}}}
	for _, p := range []string{"new.txt", "top.txt", "a/new.txt", "a/b/c/deep.txt", "a/b/c/d/new.txt", "./a//b/../b/c/new2.txt"} {
		var res writeResult
		succeed(t, invoke(t, s, "write_file", `{"path":`+quote(p)+`,"content":"new"}`, nothing), &res)
		if b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(res.Path))); err != nil || string(b) != "new" {
			t.Errorf("%s: file holds %q, %v", p, b, err)
		}
	}
	for _, name := range treeNames(t, root) {
		if strings.HasSuffix(name, ".tmp") {
			t.Errorf("temporary file left: %s", name)
		}
	}
}
