package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/goalbox/goalbox/pkg/envflag"
)

// The agent command is three programs, each with its own options and entry: the goal mode (runGoal), the benchmark
// (runBenchmarks) and the selftest (runSelfTest). The first of -goal, -benchmarks and -selftest on the command line
// chooses one; without any, GOALBOX_BENCHMARKS or GOALBOX_SELFTEST in the environment does, else the goal mode.
// Each program reads only its own variables and flags; a flag of another program is refused with the name of the
// program it belongs to.

// program is one of the three: the flag that chooses it and what its -h and messages say of it.
type program struct {
	flag     string // the flag that chooses it
	env      string // the variable that chooses it when no flag does ("" for the goal mode, the default)
	name     string // how messages name it
	summary  string // its line in the list of programs
	synopsis string // the first line of its -h
	about    string // what its -h says before the flags
	// defaults is a pointer to its options with their defaults, whose flags are the program's.
	defaults func() any
}

var (
	goalProgram = &program{
		flag: "goal", name: "the goal mode (-goal)",
		summary:  "pursue one goal with a model in a sandbox until -verify CMD passes (-continue RUN goes on with an earlier run)",
		synopsis: `go run ./agent -goal "..." [-verify CMD] [flags]`,
		about:    "The model key comes from OPENAI_API_KEY; OPENAI_BASE_URL (or -base-url) selects any OpenAI-compatible server.",
		defaults: func() any { o := defaultGoalOptions(); return &o },
	}
	benchmarkProgram = &program{
		flag: "benchmarks", env: "GOALBOX_BENCHMARKS", name: "-benchmarks",
		summary:  "run a model on the Aider Polyglot benchmark's exercises, each graded by its own tests",
		synopsis: "go run ./agent -benchmarks [-benchmarks-dir DIR] [-languages L,L] [-model M] [flags]",
		about:    "The model key comes from OPENAI_API_KEY; OPENAI_BASE_URL (or -base-url) selects any OpenAI-compatible server. The limits are those of each try.",
		defaults: func() any { o := defaultBenchmarkOptions(); return &o },
	}
	selfTestProgram = &program{
		flag: "selftest", env: "GOALBOX_SELFTEST", name: "-selftest",
		summary:  "prove the grader on this machine: each exercise's reference solution must pass and its stub fail; no model",
		synopsis: "go run ./agent -selftest [-benchmarks-dir DIR] [-languages L,L] [flags]",
		about:    "Exit status: 0 the grader is right about every exercise, 1 it is wrong about some, 2 an error.",
		defaults: func() any { o := defaultSelfTestOptions(); return &o },
	}
	programs = []*program{goalProgram, benchmarkProgram, selfTestProgram}
)

// chooseProgram is the program the command line (or else the environment) asks for; nil with -h and none asked
// for, when the list of programs is the help.
func chooseProgram(args []string, environ map[string]string) (*program, error) {
	for _, a := range flagArgs(args) {
		if p := programByFlag(flagName(a)); p != nil {
			return p, nil
		}
	}
	var chosen []*program
	for _, p := range programs {
		if v := environ[p.env]; p.env != "" && v != "" {
			on, err := strconv.ParseBool(v)
			if err != nil {
				return nil, usageError("environment variable %s: %q is not true or false", p.env, v)
			}
			if on {
				chosen = append(chosen, p)
			}
		}
	}
	switch {
	case len(chosen) > 1:
		return nil, usageError("%s and %s are both set: give one, not both", chosen[0].env, chosen[1].env)
	case len(chosen) == 1:
		return chosen[0], nil
	case slices.ContainsFunc(flagArgs(args), isHelp):
		return nil, nil
	}
	return goalProgram, nil
}

// printPrograms is the help of the command as a whole: its three programs.
func printPrograms(w io.Writer) {
	fmt.Fprintf(w, "usage: go run ./agent -goal \"...\" | -benchmarks | -selftest [flags]\n\n")
	fmt.Fprintf(w, "goalbox's agent is three programs; the first of these flags chooses one (without any, GOALBOX_BENCHMARKS or\nGOALBOX_SELFTEST in the environment does, else the goal mode):\n\n")
	for _, p := range programs {
		fmt.Fprintf(w, "  -%-12s %s\n", p.flag, p.summary)
	}
	fmt.Fprintf(w, "\nThe flags of each: go run ./agent -goal -h, -benchmarks -h, -selftest -h.\n")
}

// parseFlags fills o, p's options, from environ and then from args, checks them, and says which flags args gave. A
// flag of another program is an error that names the program it belongs to; -h prints p's own flags alone.
func parseFlags(p *program, o interface{ check() error }, args []string, environ map[string]string, stderr io.Writer) (given map[string]bool, err error) {
	eo := envflag.Options{Environment: environ, Docs: fieldDocs}
	if err := envflag.ParseEnv(o, eo); err != nil {
		return nil, usageError("%v", err)
	}
	own := newFlagSet(p, o, eo)
	own.SetOutput(stderr)
	own.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s\n\n%s\n\nflags (each also read from the environment variable shown):\n", p.synopsis, p.about)
		own.PrintDefaults()
	}
	// Said before parsing, so that -goal -h is the goal mode's help rather than a goal of "-h".
	if slices.ContainsFunc(flagArgs(args), isHelp) {
		own.Usage()
		return nil, flag.ErrHelp
	}
	// Parsed with the other programs' flags too, each taking a value as in its own program, so that every one
	// given is named at once, with its program.
	all := flag.NewFlagSet(own.Name(), flag.ContinueOnError)
	all.SetOutput(io.Discard) // a mistyped flag is answered in a line or two (below), not with the whole list
	all.Usage = func() {}
	own.VisitAll(func(f *flag.Flag) { all.Var(f.Value, f.Name, f.Usage) })
	var foreign []string
	for _, q := range programs {
		if q == p {
			continue
		}
		q.flags().VisitAll(func(f *flag.Flag) {
			if all.Lookup(f.Name) == nil {
				all.Var(foreignFlag{name: f.Name, takesNoValue: isBoolFlag(f), given: &foreign}, f.Name, "")
			}
		})
	}
	if err := all.Parse(args); err != nil {
		return nil, usageError("%v%s", err, didYouMean(err, own, p))
	}
	if len(foreign) > 0 {
		return nil, foreignFlagsError(p, foreign)
	}
	if all.NArg() > 0 {
		return nil, usageError("unexpected arguments %q: every option is a flag (quote the goal: -goal \"...\")", all.Args())
	}
	if err := o.check(); err != nil {
		return nil, usageError("%v", err)
	}
	given = map[string]bool{}
	all.Visit(func(f *flag.Flag) { given[f.Name] = true })
	return given, nil
}

// newFlagSet is the flag set of o's fields (package envflag), with -token where o has server tokens.
func newFlagSet(p *program, o any, eo envflag.Options) *flag.FlagSet {
	fs := flag.NewFlagSet("goalbox-agent -"+p.flag, flag.ContinueOnError)
	envflag.Register(fs, o, eo)
	if t, ok := o.(interface{ serverTokens() *ServerTokens }); ok {
		t.serverTokens().registerToken(fs)
	}
	return fs
}

// flags are p's flags, for telling them apart from another program's.
func (p *program) flags() *flag.FlagSet {
	return newFlagSet(p, p.defaults(), envflag.Options{Environment: map[string]string{}, Docs: fieldDocs})
}

// foreignFlag stands for a flag of another program while a program's flags are parsed: it records its name.
type foreignFlag struct {
	name         string
	takesNoValue bool
	given        *[]string
}

func (f foreignFlag) String() string   { return "" }
func (f foreignFlag) IsBoolFlag() bool { return f.takesNoValue }
func (f foreignFlag) Set(string) error {
	if !slices.Contains(*f.given, f.name) {
		*f.given = append(*f.given, f.name)
	}
	return nil
}

// foreignFlagsError names, for each flag of another program that was given, the programs it belongs to.
func foreignFlagsError(p *program, names []string) error {
	var msgs []string
	for _, name := range names {
		if q := programByFlag(name); q != nil {
			msgs = append(msgs, fmt.Sprintf("-%s and -%s exclude each other: give one, not both", p.flag, q.flag))
			continue
		}
		var owners []string
		for _, q := range programs {
			if q != p && q.flags().Lookup(name) != nil {
				owners = append(owners, q.name)
			}
		}
		msgs = append(msgs, fmt.Sprintf("-%s belongs to %s", name, strings.Join(owners, " and ")))
	}
	return usageError("%s; go run ./agent -%s -h lists the flags of %s", strings.Join(msgs, "; "), p.flag, p.name)
}

func programByFlag(name string) *program {
	for _, p := range programs {
		if p.flag == name {
			return p
		}
	}
	return nil
}

// flagArgs are the arguments before "--", where the flag package stops.
func flagArgs(args []string) []string {
	if i := slices.Index(args, "--"); i >= 0 {
		return args[:i]
	}
	return args
}

// flagName is the name of the flag an argument gives ("goal" of -goal, --goal and -goal=x), or "".
func flagName(arg string) string {
	if !strings.HasPrefix(arg, "-") {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-"), "=")
	return name
}

func isHelp(arg string) bool { name := flagName(arg); return name == "h" || name == "help" }

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// didYouMean follows flag's "flag provided but not defined: -x" with p's flags closest to x, and where the whole
// list is.
func didYouMean(err error, own *flag.FlagSet, p *program) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return ""
	}
	name = strings.TrimPrefix(name, "-")
	type near struct {
		name string
		d    int
	}
	var best []near
	own.VisitAll(func(f *flag.Flag) {
		d := editDistance(name, f.Name)
		if strings.HasPrefix(f.Name, name) || strings.HasPrefix(name, f.Name) {
			d = min(d, 1)
		}
		if d <= max(2, len(name)/3) {
			best = append(best, near{f.Name, d})
		}
	})
	slices.SortStableFunc(best, func(a, b near) int { return a.d - b.d })
	var names []string
	for _, b := range best[:min(len(best), 3)] {
		names = append(names, "-"+b.name)
	}
	s := ""
	if len(names) > 0 {
		s = "; did you mean " + strings.Join(names, " or ") + "?"
	}
	return s + fmt.Sprintf(" (go run ./agent -%s -h lists them all)", p.flag)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
