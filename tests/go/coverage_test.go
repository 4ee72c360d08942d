package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// publicFunctions lists every function the public C headers declare (DIST_API).
func publicFunctions(t *testing.T) []string {
	files, err := filepath.Glob("../../include_c/distribute/*.h*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no headers: %v", err)
	}
	re := regexp.MustCompile(`(?s)DIST_API[^;(]*?\b(dist_[a-z0-9_]+)\s*\(`)
	set := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			set[m[1]] = true
		}
	}
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Every public C function is called by the binding (Go code or its C shim) and listed in
// the binding's README coverage table: nothing silently missing.
func TestEveryCFunctionIsWrapped(t *testing.T) {
	fns := publicFunctions(t)
	if len(fns) < 170 {
		t.Fatalf("only %d functions parsed from the headers", len(fns))
	}
	var src strings.Builder
	for _, pat := range []string{"../../bindings/go/*.go", "../../bindings/go/*.c"} {
		files, _ := filepath.Glob(pat)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src.Write(b)
		}
	}
	readme, err := os.ReadFile("../../bindings/go/README.md")
	if err != nil {
		t.Fatal(err)
	}
	code := src.String()
	for _, fn := range fns {
		if !strings.Contains(code, "C."+fn+"(") && !regexp.MustCompile(`\b`+fn+`\(`).MatchString(code) {
			t.Errorf("%s is not called by the binding", fn)
		}
		if !strings.Contains(string(readme), "`"+fn+"`") {
			t.Errorf("%s is missing from bindings/go/README.md's coverage table", fn)
		}
	}
	t.Logf("%d public C functions, all wrapped", len(fns))
}
