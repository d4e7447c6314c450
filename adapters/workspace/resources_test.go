package workspace_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/ports"
)

// resourceSession serves files as resources of kind under <tmp>/root,
// beside <tmp>/secret (outside the root); it returns the session, the
// root's resolved path and the URI prefix of its files.
func resourceSession(t *testing.T, kind workspace.ResourceURIs, files map[string]string) (*workspace.Session, string, string) {
	t.Helper()
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, files)
	if err := os.WriteFile(filepath.Join(parent, "secret"), []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := workspace.New(workspace.Options{Root: root, Resources: kind})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	resolved, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "agentmcp://workspace/"
	if kind == workspace.FileURIs {
		prefix = "file://" + resolved + "/"
	}
	return s, resolved, prefix
}

func read(t *testing.T, s *workspace.Session, uri string) ([]ports.ResourceContents, error) {
	t.Helper()
	res := s.Features().Resources
	if res == nil {
		t.Fatal("the session serves no resources")
	}
	return res.ReadResource(t.Context(), uri, ports.Principal{})
}

// refused fails t unless reading uri is an error of the kinds the engine
// answers -32602 (a refusal or not found) whose contents are nil.
func refused(t *testing.T, s *workspace.Session, uri, want string) {
	t.Helper()
	c, err := read(t, s, uri)
	if err == nil || c != nil || !(errors.Is(err, ports.ErrRefused) || errors.Is(err, ports.ErrResourceNotFound)) {
		t.Fatalf("read %q = %v, %v; want a refusal", uri, c, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("read %q: %q, want it to say %q", uri, err, want)
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Errorf("read %q: the refusal carries the secret: %q", uri, err)
	}
}

func TestResourcesOptIn(t *testing.T) {
	s, _ := newSession(t, nil)
	if f := s.Features(); f != (ports.Features{}) {
		t.Fatalf("a workspace without Options.Resources serves %+v", f)
	}
	for _, kind := range []workspace.ResourceURIs{workspace.FileURIs, workspace.WorkspaceURIs} {
		s, _, prefix := resourceSession(t, kind, nil)
		tpl, err := s.Features().Resources.ResourceTemplates(t.Context(), ports.Principal{})
		if err != nil || len(tpl) != 1 || tpl[0].URITemplate != prefix+"{+path}" {
			t.Fatalf("templates = %+v, %v; want %s{+path}", tpl, err, prefix)
		}
		list, err := s.Features().Resources.ListResources(t.Context(), ports.Principal{})
		if err != nil || list == nil || len(list) != 0 {
			t.Fatalf("list = %v, %v; want none", list, err)
		}
	}
}

func TestResourceRead(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n\x00\x00"
	for _, kind := range []workspace.ResourceURIs{workspace.FileURIs, workspace.WorkspaceURIs} {
		s, _, prefix := resourceSession(t, kind, map[string]string{"a/notes.txt": "hello", "img.png": png, "data.bin": "\xff\xfe", "main.go": "package main\n", "sp ace.md": "# x"})
		for _, tc := range []struct{ path, mime, text, blob string }{
			{"a/notes.txt", "text/plain; charset=utf-8", "hello", ""},
			{"img.png", "image/png", "", png},
			{"data.bin", "application/octet-stream", "", "\xff\xfe"},
			{"main.go", "", "package main\n", ""},
			{"sp%20ace.md", "text/markdown; charset=utf-8", "# x", ""},
		} {
			c, err := read(t, s, prefix+tc.path)
			if err != nil || len(c) != 1 {
				t.Fatalf("%s: %v, %v", tc.path, c, err)
			}
			if c[0].URI != prefix+tc.path || (tc.mime != "" && c[0].MIMEType != tc.mime) || c[0].MIMEType == "" || c[0].Text != tc.text || string(c[0].Blob) != tc.blob {
				t.Errorf("%s: got %+v", tc.path, c[0])
			}
		}
	}
}

// traversals are the spellings of a way out of the root (or of a URI
// that is no file of the workspace) and what the refusal of each says.
func traversals(prefix, root string) []struct{ uri, want string } {
	return []struct{ uri, want string }{
		{prefix + "../secret", "escapes the workspace root"},
		{prefix + "%2e%2e/secret", "escapes the workspace root"},
		{prefix + "%2E%2E%2Fsecret", "escapes the workspace root"},
		{prefix + "..%2fsecret", "escapes the workspace root"},
		{prefix + "sub/../../secret", "escapes the workspace root"},
		{prefix + "sub/%2e%2e/%2e%2e/secret", "escapes the workspace root"},
		{prefix + "%252e%252e/secret", "no such file"}, // a literal "%2e%2e" directory
		{prefix + "..\\secret", "no such file"},        // a literal backslash on Unix
		{prefix + "..%5Csecret", "no such file"},       // the same, percent-encoded
		{prefix + "..%5C..%5Csecret", "no such file"},
		{prefix + "x/..%2F..%2Fsecret", "escapes the workspace root"},
		{prefix + "%252e%252e%252fsecret", "no such file"}, // double-encoded slash: one literal name
		{prefix + "%c0%ae%c0%ae/secret", "no such file"},   // overlong UTF-8 dots are bytes, not dots
		{prefix + "%2e%2e", "escapes the workspace root"},
		{prefix + "sub/a.txt\x00", "malformed"}, // a raw NUL
		{prefix + "/" + filepath.Dir(root) + "/secret", ""},
		{prefix + "sub/a.txt%00", "NUL"},
		{prefix + "sub/a.txt?x=1", "no query or fragment"},
		{prefix + "sub/a.txt#f", "no query or fragment"},
		{prefix + "sub/%zz", "malformed"},
		{prefix + "sub", "is a directory"},
		{prefix, "must not be empty"},
		{prefix + "missing.txt", "no such file"},
		{"file://" + filepath.Dir(root) + "/secret", "not a file of this workspace"},
		{"file://localhost" + root + "/sub/a.txt", "not a file of this workspace"},
		{"file://evil.example" + root + "/sub/a.txt", "not a file of this workspace"},
		{"FILE://" + root + "/sub/a.txt", "not a file of this workspace"},
		{"agentmcp://workspace@evil/sub/a.txt", "not a file of this workspace"},
		{"agentmcp://elsewhere/sub/a.txt", "not a file of this workspace"},
		{"http://example.com/", "not a file of this workspace"},
	}
}

// TestResourceTraversal: every spelling of a way out of the root is
// refused or not found, and nothing outside is read.
func TestResourceTraversal(t *testing.T) {
	for _, kind := range []workspace.ResourceURIs{workspace.FileURIs, workspace.WorkspaceURIs} {
		s, root, prefix := resourceSession(t, kind, map[string]string{"sub/a.txt": "a"})
		for _, tc := range traversals(prefix, root) {
			refused(t, s, tc.uri, tc.want)
		}
	}
}

// TestResourceSymlink: a link that leads out of the root is refused; one
// that stays inside is followed, as read_file follows it.
func TestResourceSymlink(t *testing.T) {
	s, root, prefix := resourceSession(t, workspace.FileURIs, map[string]string{"in.txt": "inside"})
	if err := os.Symlink(filepath.Join(filepath.Dir(root), "secret"), filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("in.txt", filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	refused(t, s, prefix+"out", "leads outside the workspace root")
	if c, err := read(t, s, prefix+"alias"); err != nil || c[0].Text != "inside" {
		t.Fatalf("alias: %v, %v", c, err)
	}
}

// TestResourceSymlinkSwap: while another goroutine swaps a name between
// a file and a link out of the root, no read returns what is outside: the
// name is resolved once, on the descriptor that is read.
func TestResourceSymlinkSwap(t *testing.T) {
	s, root, prefix := resourceSession(t, workspace.WorkspaceURIs, map[string]string{"file": "inside"})
	name, tmpLink, tmpFile := filepath.Join(root, "swap"), filepath.Join(root, ".link"), filepath.Join(root, "file")
	secret := filepath.Join(filepath.Dir(root), "secret")
	stop := swapping(name, tmpLink, func() { os.Symlink(secret, tmpLink) }, func() { os.Link(tmpFile, tmpLink) })
	var inside int
	for range 2000 {
		c, err := read(t, s, prefix+"swap")
		if err == nil {
			if c[0].Text != "inside" {
				stop()
				t.Fatalf("read through the swap returned %q", c[0].Text)
			}
			inside++
		}
	}
	stop()
	t.Logf("%d of 2000 reads found the file; the rest were refused", inside)
}

// sparseFile makes path a sparse file of size bytes: a huge file that
// costs no disk.
func sparseFile(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

// TestResourceHugeFile: a sparse 1 GiB file is refused from its size,
// before anything is read.
func TestResourceHugeFile(t *testing.T) {
	s, root, prefix := resourceSession(t, workspace.FileURIs, nil)
	sparseFile(t, filepath.Join(root, "huge"), 1<<30)
	refused(t, s, prefix+"huge", `"huge" is 1073741824 bytes: a resource read reads files of at most 1048576 bytes (1 MiB)`)
	over := strings.Repeat("x", workspace.MaxReadBytes+1)
	writeTree(t, root, map[string]string{"over": over})
	refused(t, s, prefix+"over", "1048577 bytes")
}

// TestResourceSymlinkSwapDir: while another goroutine swaps a directory
// of the path between a link inside the root and a link to a directory
// outside it holding a file of the same name, no read returns what is
// outside: every component is resolved under the root, on the
// descriptors that are read.
func TestResourceSymlinkSwapDir(t *testing.T) {
	s, root, prefix := resourceSession(t, workspace.FileURIs, map[string]string{".real/f": "inside"})
	out := filepath.Join(filepath.Dir(root), "out")
	writeTree(t, out, map[string]string{"f": "SECRET"})
	name, tmp := filepath.Join(root, "d"), filepath.Join(root, ".d")
	stop := swapping(name, tmp, func() { os.Symlink(out, tmp) }, func() { os.Symlink(".real", tmp) })
	var inside, outside int
	for range 2000 {
		c, err := read(t, s, prefix+"d/f")
		switch {
		case err == nil && c[0].Text == "inside":
			inside++
		case err == nil:
			stop()
			t.Fatalf("read through the swapped directory returned %q", c[0].Text)
		case strings.Contains(err.Error(), "SECRET"):
			t.Fatalf("the refusal carries the secret: %v", err)
		default:
			outside++
		}
	}
	stop()
	t.Logf("%d of 2000 reads found the inside file; %d were refused", inside, outside)
}

// swapping renames tmp over name again and again until stop is called,
// tmp made by outside and inside in turn; stop returns once the swapping
// has ended, and may be called more than once.
func swapping(name, tmp string, outside, inside func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			os.Remove(tmp)
			if i%2 == 0 {
				outside()
			} else {
				inside()
			}
			os.Rename(tmp, name)
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }); wg.Wait() }
}
