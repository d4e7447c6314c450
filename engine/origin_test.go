package engine_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPipelineNeverAsksItsOrigin: no engine code asserts a value to one of
// the engine's own types (docs/ARCHITECTURE.md: "The pipeline asks these
// questions and never which framing it serves"). What a stream and an
// exchange differ in is the origin interface's; a type assertion or type
// switch on an engine type (issue 30: tasks_legacy.go's p.carrier.(*conn))
// would ask which one it serves instead.
func TestPipelineNeverAsksItsOrigin(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var parsed []*ast.File
	own := map[string]bool{} // the package's type names
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
				for _, s := range g.Specs {
					own[s.(*ast.TypeSpec).Name.Name] = true
				}
			}
		}
	}
	ownType := func(e ast.Expr) bool {
		if s, ok := e.(*ast.StarExpr); ok {
			e = s.X
		}
		id, ok := e.(*ast.Ident)
		return ok && own[id.Name]
	}
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeAssertExpr:
				if n.Type != nil && ownType(n.Type) {
					t.Errorf("%s: a type assertion to the engine's own type %s", fset.Position(n.Pos()), typeName(n.Type))
				}
			case *ast.TypeSwitchStmt:
				for _, c := range n.Body.List {
					for _, e := range c.(*ast.CaseClause).List {
						if ownType(e) {
							t.Errorf("%s: a type switch case on the engine's own type %s", fset.Position(e.Pos()), typeName(e))
						}
					}
				}
			}
			return true
		})
	}
	if len(parsed) == 0 || len(own) == 0 {
		t.Fatalf("read %d files declaring %d types: the check checked nothing", len(parsed), len(own))
	}
}

func typeName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		return "*" + typeName(s.X)
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}
