package restore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"strconv"
	"testing"
)

// TestEntryLimitIsTheCatalogs (review finding 11): maxEntryBody is the
// catalog's import body limit, httpx.MaxImportJSONBody. doclib does not
// import libs (it would pull the services' web stack into the CLI), so
// the constant is read from its source: a change there fails here.
func TestEntryLimitIsTheCatalogs(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join("..", "..", "..", "..", "libs", "httpx", "bind.go"), nil, 0)
	if err != nil {
		t.Fatalf("read libs/httpx/bind.go: %v", err)
	}
	obj := f.Scope.Lookup("MaxImportJSONBody")
	if obj == nil {
		t.Fatal("libs/httpx/bind.go no longer declares MaxImportJSONBody")
	}
	spec := obj.Decl.(*ast.ValueSpec)
	tv, err := types.Eval(fset, nil, spec.Values[0].Pos(), types.ExprString(spec.Values[0]))
	if err != nil {
		t.Fatalf("evaluate MaxImportJSONBody: %v", err)
	}
	if got := tv.Value.String(); got != strconv.Itoa(maxEntryBody) {
		t.Errorf("httpx.MaxImportJSONBody is %s, doclib's maxEntryBody %d: keep them equal", got, maxEntryBody)
	}
}
