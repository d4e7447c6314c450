package layout

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestExamplesImportNoInternalPackage: a runnable example is what a reader
// copies into their own module, where this module's internal packages
// cannot be imported; so every example file (example_test.go, in any
// module of the repository) imports only exported packages.
func TestExamplesImportNoInternalPackage(t *testing.T) {
	root := "../.."
	found := 0
	isExample := func(name string) bool {
		return name == "example_test.go" || strings.HasSuffix(name, "_example_test.go")
	}
	err := walkFiles(root, isExample, func(path string) error {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		found++
		rel, _ := filepath.Rel(root, path)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, Module+"/") && (strings.Contains(p, "/internal/") || strings.HasSuffix(p, "/internal")) {
				t.Errorf("%s imports %s: an example imports only exported packages (a reader copies it)", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 2 {
		t.Fatalf("found %d example files: is the walk rooted at the repository?", found)
	}
}
