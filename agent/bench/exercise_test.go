package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDiscoverCountsPerLanguage(t *testing.T) {
	dir := benchmarkDir(t)
	all, err := Discover(dir, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"cpp": 26, "go": 39, "java": 47, "javascript": 49, "python": 34, "rust": 30}
	got := map[string]int{}
	for _, ex := range all {
		got[ex.Lang]++
		if len(ex.Solution) == 0 || len(ex.Test) == 0 || len(ex.Example) == 0 {
			t.Errorf("%s: solution %v test %v example %v", ex.ID(), ex.Solution, ex.Test, ex.Example)
		}
	}
	for lang, n := range want {
		if got[lang] != n {
			t.Errorf("%s: %d exercises, want %d", lang, got[lang], n)
		}
	}
	if len(all) != 225 {
		t.Errorf("%d exercises, want 225", len(all))
	}
	if !slices.IsSortedFunc(all, func(a, b Exercise) int {
		if a.Lang != b.Lang {
			return slices.Index(Languages, a.Lang) - slices.Index(Languages, b.Lang)
		}
		return strings.Compare(a.Slug, b.Slug)
	}) {
		t.Error("exercises are not in language, slug order")
	}
}

func TestDiscoverReadsConfigLists(t *testing.T) {
	dir := benchmarkDir(t)
	exs, err := Discover(dir, Filter{Languages: []string{"go"}, Keywords: []string{"alphametics"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) != 1 {
		t.Fatalf("got %d exercises, want 1", len(exs))
	}
	ex := exs[0]
	if !slices.Equal(ex.Solution, []string{"alphametics.go"}) || !slices.Equal(ex.Test, []string{"alphametics_test.go"}) ||
		!slices.Equal(ex.Example, []string{".meta/example.go"}) || !slices.Equal(ex.Editor, []string{"cases_test.go"}) ||
		!slices.Equal(ex.Invalidator, []string{"go.mod"}) {
		t.Errorf("lists not read from config: %+v", ex)
	}
}

func TestDiscoverFilters(t *testing.T) {
	dir := benchmarkDir(t)
	got, err := Discover(dir, Filter{Languages: []string{"python", "rust"}, Keywords: []string{"bowling", "forth"}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ex := range got {
		ids = append(ids, ex.ID())
	}
	want := []string{"python/bowling", "python/forth", "rust/bowling", "rust/forth"}
	if !slices.Equal(ids, want) {
		t.Errorf("got %v, want %v", ids, want)
	}

	a, _ := Discover(dir, Filter{Seed: 7, Limit: 10})
	b, _ := Discover(dir, Filter{Seed: 7, Limit: 10})
	c, _ := Discover(dir, Filter{Seed: 8, Limit: 10})
	if len(a) != 10 || !slices.EqualFunc(a, b, func(x, y Exercise) bool { return x.ID() == y.ID() }) {
		t.Error("the same seed must give the same order")
	}
	if slices.EqualFunc(a, c, func(x, y Exercise) bool { return x.ID() == y.ID() }) {
		t.Error("different seeds gave the same ten exercises")
	}
	sorted, _ := Discover(dir, Filter{Limit: 3})
	if len(sorted) != 3 || sorted[0].ID() != "cpp/all-your-base" {
		t.Errorf("limit without seed: %v", sorted)
	}
}

func TestDiscoverRejectsBadInput(t *testing.T) {
	_, err := Discover(t.TempDir(), Filter{Languages: []string{"cobol"}})
	if err == nil || !strings.Contains(err.Error(), "allowed: cpp, go, java, javascript, python, rust") {
		t.Errorf("unknown language: %v", err)
	}
	_, err = Discover(t.TempDir(), Filter{Languages: []string{"go"}})
	if err == nil || !strings.Contains(err.Error(), "no go/exercises/practice") {
		t.Errorf("missing folder: %v", err)
	}

	for name, config := range map[string]string{
		"escape":   `{"files":{"solution":["../../x.go"],"test":["x_test.go"]}}`,
		"absolute": `{"files":{"solution":["/etc/passwd"],"test":["x_test.go"]}}`,
		"no tests": `{"files":{"solution":["x.go"]}}`,
		"not json": `{"files":`,
	} {
		dir := t.TempDir()
		ex := filepath.Join(dir, "go", "exercises", "practice", "x")
		if err := os.MkdirAll(filepath.Join(ex, ".meta"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ex, ".meta", "config.json"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Discover(dir, Filter{Languages: []string{"go"}})
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), dir) {
			t.Errorf("%s: message shows a host path: %v", name, err)
		}
	}
}
