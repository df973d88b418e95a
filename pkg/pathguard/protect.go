package pathguard

// Protected project files. The workspace is a person's project, and some of its files run code later on the host,
// outside every sandbox: git runs .git/hooks and what .git/config names (core.hooksPath, core.fsmonitor), editors
// run .vscode/tasks.json, direnv runs .envrc, MCP clients start what .mcp.json names. No command and no tool may
// create, change, replace, rename or delete them; reading them is fine.
//
// A pattern is a workspace-relative path of one or more components joined by "/", each an exact name or a
// path.Match glob ("worktrees/*"). A path is protected when some run of its consecutive components matches the
// pattern's components: ".git/hooks" protects ".git/hooks", "sub/.git/hooks" and "sub/.git/hooks/pre-commit" alike,
// so a pattern covers every depth and everything beneath what it names. Names are compared without regard to case,
// because on a case-insensitive file system (macOS, Windows) ".GIT/HOOKS" is the same folder.

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"

	"github.com/goalbox/goalbox/pkg/envflag"
)

// DefaultProtected are the paths protected unless -unprotect removes one: what git, editors, direnv and agent tools
// run or load from a project folder.
var DefaultProtected = []string{
	".git/hooks",
	".git/config",
	".git/config.worktree",
	".git/worktrees/*/config",
	".git/worktrees/*/config.worktree",
	// commondir names the folder whose config and hooks git uses instead of this one's: a .git/commondir written
	// into any repository is a .git/config and .git/hooks of the writer's choosing.
	".git/commondir",
	".git/worktrees/*/commondir",
	// A submodule's git dir, with its own config and hooks, which git uses in the submodule's folder (sub/.git is
	// a file, "gitdir: ../.git/modules/sub"). Whole, since module names may hold slashes (.git/modules/a/b/config).
	".git/modules",
	".gitmodules",
	".vscode",
	".idea",
	".envrc",
	".mcp.json",
	".cursor",
	".claude",
	".codex",
}

// Protection is a validated set of protected-path patterns. The zero value and nil protect nothing.
type Protection struct {
	patterns []string
	parts    [][]string // lower-cased components of each pattern
	// The patterns' last components, for MayEnd: literal names in a set, globs in a list.
	lastNames map[string]bool
	lastGlobs []string
}

// NewProtection is the default patterns, plus add, less remove. A pattern must be relative, use "/" separators,
// hold no "." or ".." component and be a valid glob; a removed pattern must be one of the defaults or of add.
func NewProtection(add, remove []string) (*Protection, error) {
	p := &Protection{}
	list := slices.Clone(DefaultProtected)
	for _, a := range add {
		c, err := cleanPattern(a)
		if err != nil {
			return nil, fmt.Errorf("-protect %q: %w", a, err)
		}
		if !slices.Contains(list, c) {
			list = append(list, c)
		}
	}
	for _, r := range remove {
		if r == UnprotectAll {
			list = nil // everything, the additions of add included: nothing is protected
			continue
		}
		c, err := cleanPattern(r)
		if err != nil {
			return nil, fmt.Errorf("-unprotect %q: %w", r, err)
		}
		i := slices.Index(list, c)
		if i < 0 {
			return nil, fmt.Errorf("-unprotect %q: not a protected pattern; the patterns are %s", r, strings.Join(list, ", "))
		}
		list = slices.Delete(list, i, i+1)
	}
	p.lastNames = map[string]bool{}
	for _, c := range list {
		parts := strings.Split(strings.ToLower(c), "/")
		p.patterns = append(p.patterns, c)
		p.parts = append(p.parts, parts)
		if last := parts[len(parts)-1]; strings.ContainsAny(last, `*?[\`) {
			p.lastGlobs = append(p.lastGlobs, last)
		} else {
			p.lastNames[last] = true
		}
	}
	return p, nil
}

// cleanPattern validates one pattern and returns it without a trailing "/".
func cleanPattern(s string) (string, error) {
	s = strings.TrimSuffix(strings.TrimSpace(s), "/")
	switch {
	case s == "":
		return "", fmt.Errorf("empty; a pattern is a workspace-relative path such as .git/hooks or *.pem")
	case strings.HasPrefix(s, "/"):
		return "", fmt.Errorf("absolute; a pattern is relative and matches at any depth of the workspace")
	case strings.ContainsAny(s, "\\\x00"):
		return "", fmt.Errorf("holds a backslash or NUL; use / between components")
	}
	for _, c := range strings.Split(s, "/") {
		if c == "" || c == "." || c == ".." {
			return "", fmt.Errorf("has an empty, . or .. component; a pattern names components such as .git/hooks")
		}
		if _, err := path.Match(c, ""); err != nil {
			return "", fmt.Errorf("component %q is not a valid glob: %v", c, err)
		}
	}
	return s, nil
}

// Patterns are the patterns in force, in order.
func (p *Protection) Patterns() []string {
	if p == nil {
		return nil
	}
	return slices.Clone(p.patterns)
}

// Match reports whether the workspace-relative, "/"-separated path rel is protected, and by which pattern.
func (p *Protection) Match(rel string) (pattern string, ok bool) {
	if p == nil || rel == "" || rel == "." {
		return "", false
	}
	comps := strings.Split(strings.ToLower(rel), "/")
	for i, parts := range p.parts {
		if matchRun(comps, parts) {
			return p.patterns[i], true
		}
	}
	return "", false
}

// MayEnd reports whether a path whose last component is name can be protected by a pattern ending there: a walk
// that knows the folder holding name is not protected calls Match only when MayEnd is true.
func (p *Protection) MayEnd(name string) bool {
	if p == nil {
		return false
	}
	if p.lastNames[name] {
		return true
	}
	if strings.ContainsFunc(name, unicode.IsUpper) {
		name = strings.ToLower(name)
		if p.lastNames[name] {
			return true
		}
	}
	for _, g := range p.lastGlobs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// matchRun reports whether some run of consecutive components of comps matches parts.
func matchRun(comps, parts []string) bool {
	for start := 0; start+len(parts) <= len(comps); start++ {
		all := true
		for j, pat := range parts {
			if ok, _ := path.Match(pat, comps[start+j]); !ok {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// ProtectedError is the refusal of a change to a protected path: the message names the path, the pattern and the
// flag that changes the list.
func ProtectedError(op, rel, pattern string) *Error {
	return &Error{Op: op, Path: rel, Reason: ReasonProtected, Detail: fmt.Sprintf(
		"pattern %q: files that run code on the host later (git hooks and config, editor and agent settings, .envrc) "+
			"cannot be created, changed, moved or deleted from the sandbox; reading them is allowed; whoever starts "+
			"the server changes the list with -protect and -unprotect", pattern)}
}

// maxParts is the most components of any pattern in force.
func (p *Protection) maxParts() int {
	n := 0
	for _, parts := range p.parts {
		n = max(n, len(parts))
	}
	return n
}

// matchEnd reports whether some pattern matches the run of components that ends at the last of comps, which are
// lower-cased. A walk that stops at the first protected entry it meets knows that no ancestor of the entry in hand
// is protected, so only such runs can match it: checking an entry then costs the patterns, not the entry's depth
// (a full Match of every entry of a tree 10,000 folders deep would cost the sum of their depths).
func (p *Protection) matchEnd(comps []string) (string, bool) {
	for i, parts := range p.parts {
		if len(parts) <= len(comps) && matchRun(comps[len(comps)-len(parts):], parts) {
			return p.patterns[i], true
		}
	}
	return "", false
}

// active reports whether p protects anything.
func (p *Protection) active() bool { return p != nil && len(p.patterns) > 0 }

// ParseProtection is NewProtection for the -protect and -unprotect flags and their environment twins: each item
// may hold several patterns separated by commas ("-protect '*.pem,secrets'"), and the flags may be repeated.
func ParseProtection(add, remove []string) (*Protection, error) {
	split := func(items []string) []string {
		var out []string
		for _, it := range items {
			out = append(out, envflag.SplitList(it)...)
		}
		return out
	}
	return NewProtection(split(add), split(remove))
}

// UnprotectAll, given to -unprotect, removes every pattern: for workspaces that are nobody's project (a benchmark's
// sandboxes, reset between exercises), where a model's `git init` must not make a folder undeletable.
const UnprotectAll = "all"

// ProtectUsage and UnprotectUsage are the usage of the -protect and -unprotect flags, one text for every command
// that takes them (both servers, the agent); UnprotectUsage lists the defaults, so the help cannot drift from them.
const ProtectUsage = "protect another path pattern from every change, at any depth of the workspace (e.g. secrets or *.pem); repeatable or comma-separated"

func UnprotectUsage() string {
	return "let a default protected pattern be changed (" + strings.Join(DefaultProtected, ", ") + "), or all of them with 'all'; repeatable or comma-separated"
}

// gitlinkPattern is the pattern a file or symlink named .git would get around, "" when none is in force. A gitlink
// (a file .git holding "gitdir: PATH", as submodules and worktrees have) or a symlink named .git makes git use
// PATH's config and hooks, which no pattern names: while .git/config or .git/hooks is protected, no file or symlink
// named .git may be made or replaced (a .git folder may: it is what git init makes, and its config and hooks are
// protected where it is).
func (p *Protection) gitlinkPattern() string {
	if p == nil {
		return ""
	}
	for _, pat := range []string{".git/config", ".git/hooks"} {
		if slices.Contains(p.patterns, pat) {
			return pat
		}
	}
	return ""
}
