// Package bench runs the Aider Polyglot benchmark: it finds Exercism exercises, copies them into a run folder
// without their reference solutions, puts a model to work on each (Run, through agent/loop), grades a workspace
// with the language's own test command inside a sandbox, proves the grader (SelfTest), and keeps per-exercise
// results and a summary. The loop, the model client and the sandboxes are not here: it uses agent/loop's, and opens
// its sandboxes (the model's and the grader's alike) with agent/sandbox.
package bench

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Languages are the benchmark's tracks, in the order they are listed and run.
var Languages = []string{"cpp", "go", "java", "javascript", "python", "rust"}

// Exercise is one Exercism practice exercise as its .meta/config.json describes it. File lists are paths relative
// to Dir with "/" separators, exactly as the config names them.
type Exercise struct {
	Lang string // track, e.g. "go"
	Slug string // folder name, e.g. "two-bucket"
	Dir  string // the pristine source folder; never written to

	Solution    []string // files the model is to change
	Test        []string // the tests that grade it
	Example     []string // the reference solution (under .meta/)
	Editor      []string // read-only helpers the tests need
	Invalidator []string // build files whose change invalidates a result
	// Other holds any further file lists the config names, by key, so nothing it lists is ignored.
	Other map[string][]string
}

// ID is "lang/slug", the exercise's name in results and filters.
func (e Exercise) ID() string { return e.Lang + "/" + e.Slug }

// Filter narrows and orders a discovery. The zero Filter takes every exercise of every language in sorted order.
type Filter struct {
	Languages []string // tracks to take; empty means all
	Keywords  []string // take an exercise when its slug contains any of these; empty means all
	Limit     int      // take at most this many after ordering; 0 means no limit
	Seed      int64    // non-zero: shuffle deterministically with this seed before the limit applies
}

// exerciseConfig is the part of .meta/config.json we read.
type exerciseConfig struct {
	Files map[string][]string `json:"files"`
}

// Discover lists the exercises under dir (dir/<lang>/exercises/practice/<slug>) that pass f, sorted by language
// then slug, or shuffled by f.Seed.
func Discover(dir string, f Filter) ([]Exercise, error) {
	langs := Languages
	if len(f.Languages) > 0 {
		for _, l := range f.Languages {
			if !slices.Contains(Languages, l) {
				return nil, fmt.Errorf("unknown language %q; allowed: %s", l, strings.Join(Languages, ", "))
			}
		}
		langs = f.Languages
	}
	var out []Exercise
	for _, lang := range langs {
		practice := filepath.Join(dir, lang, "exercises", "practice")
		entries, err := os.ReadDir(practice)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("benchmark folder has no %s/exercises/practice: is %q the polyglot-benchmark checkout?", lang, filepath.Base(dir))
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s exercises: %w", lang, err)
		}
		for _, e := range entries {
			if !e.IsDir() || !matchesKeywords(e.Name(), f.Keywords) {
				continue
			}
			ex, err := LoadExercise(filepath.Join(practice, e.Name()), lang)
			if err != nil {
				return nil, err
			}
			out = append(out, ex)
		}
	}
	slices.SortFunc(out, func(a, b Exercise) int {
		return cmp.Or(cmp.Compare(slices.Index(Languages, a.Lang), slices.Index(Languages, b.Lang)), strings.Compare(a.Slug, b.Slug))
	})
	if f.Seed != 0 {
		r := rand.New(rand.NewPCG(uint64(f.Seed), 0x9e3779b97f4a7c15))
		r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

func matchesKeywords(slug string, keywords []string) bool {
	return len(keywords) == 0 || slices.ContainsFunc(keywords, func(k string) bool { return k != "" && strings.Contains(slug, k) })
}

// LoadExercise reads one exercise folder's .meta/config.json. Every listed path must be relative and stay inside
// the folder; solution and test lists must not be empty, since the grader cannot work without them.
func LoadExercise(dir, lang string) (Exercise, error) {
	slug := filepath.Base(dir)
	data, err := os.ReadFile(filepath.Join(dir, ".meta", "config.json"))
	if err != nil {
		return Exercise{}, fmt.Errorf("%s/%s: reading .meta/config.json: %w", lang, slug, errors.Unwrap(err))
	}
	var cfg exerciseConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return Exercise{}, fmt.Errorf("%s/%s: .meta/config.json is not valid JSON: %v", lang, slug, err)
	}
	for key, list := range cfg.Files {
		for _, p := range list {
			if !validRelPath(p) {
				return Exercise{}, fmt.Errorf("%s/%s: .meta/config.json files.%s names %q, which is not a relative path inside the exercise", lang, slug, key, p)
			}
		}
	}
	ex := Exercise{
		Lang: lang, Slug: slug, Dir: dir,
		Solution:    cfg.Files["solution"],
		Test:        cfg.Files["test"],
		Example:     cfg.Files["example"],
		Editor:      cfg.Files["editor"],
		Invalidator: cfg.Files["invalidator"],
	}
	for key, list := range cfg.Files {
		switch key {
		case "solution", "test", "example", "editor", "invalidator":
		default:
			if ex.Other == nil {
				ex.Other = map[string][]string{}
			}
			ex.Other[key] = list
		}
	}
	if len(ex.Solution) == 0 || len(ex.Test) == 0 {
		return Exercise{}, fmt.Errorf("%s/%s: .meta/config.json must list files.solution and files.test", lang, slug)
	}
	return ex, nil
}

// validRelPath accepts a clean, relative, slash-separated path that stays inside its folder.
func validRelPath(p string) bool {
	if p == "" || strings.ContainsRune(p, 0) || strings.Contains(p, `\`) || path.IsAbs(p) {
		return false
	}
	c := path.Clean(p)
	return c == p && c != "." && c != ".." && !strings.HasPrefix(c, "../")
}
