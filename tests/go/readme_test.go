package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The README's "### Go" example, compiled and run as a user would (its own module with a
// replace line), must print 6.
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	ok(t, err)
	text := string(readme)
	i := strings.Index(text, "\n### Go\n")
	if i < 0 {
		t.Fatal(`README.md has no "### Go" section`)
	}
	text = text[i:]
	start := strings.Index(text, "```go\n")
	if start < 0 {
		t.Fatal("no ```go block in the Go section")
	}
	code := text[start+len("```go\n"):]
	code = code[:strings.Index(code, "```")]
	if n := strings.Count(code, "\n"); n > 45 {
		t.Fatalf("README example has %d lines", n)
	}
	dir := t.TempDir()
	binding, err := filepath.Abs("../../bindings/go")
	ok(t, err)
	ok(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(code), 0o644))
	ok(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module readme\n\ngo 1.19\n\nrequire distribute v0.0.0\n\nreplace distribute => "+binding+"\n"), 0o644))
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	if strings.TrimSpace(string(out)) != "6 <nil>" {
		t.Fatalf("README example printed %q, want \"6 <nil>\"", out)
	}
}
