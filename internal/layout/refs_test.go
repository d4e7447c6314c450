package layout

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The repository owns its contract: docs/SPEC.md. Nothing in the tree may
// point at a document outside it, every "docs/SPEC.md §n" citation must name
// a section the file has, and every wire case cited (K1…) must be one its
// appendix defines.
var (
	// outsideRef matches references to material outside the repository, as
	// an earlier layout had it: a sibling "shared" folder, its cases file,
	// its reference folder.
	outsideRef = regexp.MustCompile(`\.\./shared|shared/SPEC|wire-cases\.md|shared/reference|shared/cases`)
	// bareSpec is a citation of "SPEC" that does not name docs/SPEC.md.
	bareSpec = regexp.MustCompile(`(^|[^/\w])SPEC\b`)
	// sectionCite is one "docs/SPEC.md §n[.m]" citation, possibly broken
	// over a comment line.
	sectionCite = regexp.MustCompile(`docs/SPEC\.md(?:\s|//|#)*§(\d+(?:\.\d+)?)`)
	// caseCite is a wire case code.
	caseCite = regexp.MustCompile(`\bK(\d+)\b`)
	// heading is a section heading of docs/SPEC.md: "## 5. …", "### 5.2 …",
	// "### K4. …".
	heading = regexp.MustCompile(`^#{2,3} (K?\d+(?:\.\d+)?)\.? `)
	// listItem is a numbered item of a section's top-level list.
	listItem = regexp.MustCompile(`^(\d+)\. `)
)

// textFile reports whether a file is one the check reads: source,
// documentation, scripts and transcripts; never installed packages or locks.
func textFile(path string) bool {
	switch filepath.Ext(path) {
	case ".go", ".md", ".sh", ".txt", ".yml", ".yaml", ".mjs", ".js", ".ts", ".template":
		return true
	}
	return filepath.Base(path) == "run"
}

func TestNoReferenceOutsideTheRepository(t *testing.T) {
	root := "../.."
	spec, err := os.ReadFile(filepath.Join(root, "docs", "SPEC.md"))
	if err != nil {
		t.Fatalf("the contract must be in the repository: %v", err)
	}
	sections := map[string]bool{}
	// A heading is a section; a numbered item "m." of section n's list is
	// citable as §n.m (§3.2 is the second rule of "3. tools/call").
	section := ""
	for _, line := range strings.Split(string(spec), "\n") {
		if m := heading.FindStringSubmatch(line + " "); m != nil {
			section = m[1]
			sections[section] = true
			continue
		}
		if m := listItem.FindStringSubmatch(line); m != nil && section != "" && !strings.Contains(section, ".") {
			sections[section+"."+m[1]] = true
		}
	}
	for _, want := range []string{"1", "4", "5.2", "6", "10", "K1", "K9"} {
		if !sections[want] {
			t.Fatalf("docs/SPEC.md has no heading %q (found %v)", want, sections)
		}
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if name == ".git" || name == "node_modules" || name == "out" || strings.HasPrefix(name, ".tmp") {
				return filepath.SkipDir
			}
			return nil
		}
		if !textFile(path) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		rel, _ := filepath.Rel(root, path)
		text := string(b)
		for i, line := range strings.Split(text, "\n") {
			if outsideRef.MatchString(line) && rel != filepath.Join("internal", "layout", "refs_test.go") {
				t.Errorf("%s:%d points outside the repository: %s", rel, i+1, strings.TrimSpace(line))
			}
			if bareSpec.MatchString(strings.ReplaceAll(line, "docs/SPEC.md", "")) && rel != filepath.Join("internal", "layout", "refs_test.go") {
				t.Errorf("%s:%d cites SPEC without its path (docs/SPEC.md): %s", rel, i+1, strings.TrimSpace(line))
			}
			for _, m := range caseCite.FindAllStringSubmatch(line, -1) {
				if !sections["K"+m[1]] {
					t.Errorf("%s:%d cites wire case K%s, which docs/SPEC.md does not define", rel, i+1, m[1])
				}
			}
		}
		for _, m := range sectionCite.FindAllStringSubmatch(text, -1) {
			if !sections[m[1]] {
				t.Errorf("%s cites docs/SPEC.md §%s, which has no such section", rel, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read only %d files: is the walk rooted at the repository?", files)
	}
}

// guideLink is a relative link of a guide: [text](target).
var guideLink = regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)

// TestCarrierGuideShowsRealCode: every Go block of docs/carrier.md is the
// repository's own code — its lines, without their indentation, appear in
// that order and contiguously in some .go file of the tree (the example
// module included) — and every relative link names a file or directory
// that exists. A guide whose examples drift from the code that compiles
// fails here.
func TestCarrierGuideShowsRealCode(t *testing.T) {
	root := "../.."
	guide, err := os.ReadFile(filepath.Join(root, "docs", "carrier.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlocks(string(guide))
	if len(blocks) < 5 {
		t.Fatalf("docs/carrier.md has %d Go blocks: is the extraction broken?", len(blocks))
	}
	var sources [][]string
	isGo := func(name string) bool { return filepath.Ext(name) == ".go" }
	err = walkFiles(root, isGo, func(path string) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sources = append(sources, codeLines(string(b)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range blocks {
		want := codeLines(block)
		if !containedIn(want, sources) {
			t.Errorf("docs/carrier.md shows code that no .go file has:\n%s", block)
		}
	}
	for _, m := range guideLink.FindAllStringSubmatch(string(guide), -1) {
		if _, err := os.Stat(filepath.Join(root, "docs", m[1])); err != nil {
			t.Errorf("docs/carrier.md links %s: %v", m[1], err)
		}
	}
}

// goBlocks returns the bodies of the ```go blocks of a Markdown text.
func goBlocks(md string) []string {
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(md, "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```go":
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, line)
		}
	}
	return blocks
}

// codeLines is text's non-blank lines, trimmed.
func codeLines(text string) []string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// containedIn reports whether want occurs contiguously in one of sources.
func containedIn(want []string, sources [][]string) bool {
	for _, src := range sources {
	next:
		for i := 0; i+len(want) <= len(src); i++ {
			for j, w := range want {
				if src[i+j] != w {
					continue next
				}
			}
			return true
		}
	}
	return false
}
