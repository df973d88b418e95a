package envflag_test

import (
	"bytes"
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/envflag"
)

type Inner struct {
	Depth int `env:"DEPTH" flag:"depth" usage:"how deep"`
}

type Theirs struct {
	Turns int `env:"TURNS"` // another package's struct: its flag and usage come from Options.Docs
}

type settings struct {
	Addr    string        `env:"ADDR" flag:"addr" usage:"listen address"`
	Verbose bool          `env:"VERBOSE" flag:"verbose" usage:"say more"`
	Size    int64         `env:"SIZE" flag:"size" usage:"largest size"`
	Ratio   float64       `env:"RATIO" flag:"ratio" usage:"a ratio"`
	Wait    time.Duration `env:"WAIT" flag:"wait" usage:"how long"`
	Hosts   []string      `env:"HOSTS" envSeparator:"," flag:"hosts" usage:"comma-separated hosts"`
	Allow   []string      `env:"ALLOW" envSeparator:"\n" flag:"allow" flagList:"repeat" usage:"a pattern; repeatable"`
	Secret  string        `env:"SECRET"` // no usage: environment only
	Inner
	Theirs
}

var docs = map[string]envflag.Doc{"Turns": {Flag: "turns", Usage: "most turns"}}

func load(t *testing.T, environ map[string]string, args ...string) settings {
	t.Helper()
	s := settings{Addr: "127.0.0.1:1", Wait: time.Second, Inner: Inner{Depth: 3}}
	o := envflag.Options{Prefix: "T_", Environment: environ, Docs: docs}
	if err := envflag.ParseEnv(&s, o); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	envflag.Register(fs, &s, o)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEnvAndFlagsCombine: a variable sets its field, a flag given on the command line wins over it, and a field
// neither sets keeps its default.
func TestEnvAndFlagsCombine(t *testing.T) {
	environ := map[string]string{"T_ADDR": "env:1", "T_SIZE": "7", "T_WAIT": "2m", "T_HOSTS": "a,b", "T_ALLOW": "^x\n^y",
		"T_SECRET": "s3", "T_DEPTH": "5", "T_TURNS": "9", "T_VERBOSE": "true"}
	got := load(t, environ, "-size", "8", "-hosts", " c, ,d ", "-allow", "^z", "-depth", "6", "-ratio", "0.5")
	want := settings{Addr: "env:1", Verbose: true, Size: 8, Ratio: 0.5, Wait: 2 * time.Minute, Hosts: []string{"c", "d"},
		Allow: []string{"^x", "^y", "^z"}, Secret: "s3", Inner: Inner{Depth: 6}, Theirs: Theirs{Turns: 9}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if got := load(t, map[string]string{}, "-turns", "4"); got.Addr != "127.0.0.1:1" || got.Wait != time.Second || got.Depth != 3 || got.Turns != 4 {
		t.Errorf("defaults and a documented field of another package's struct: %+v", got)
	}
}

// TestUsageNamesEachVariable: every flag's usage ends with its variable, prefix included; a field without usage
// has no flag.
func TestUsageNamesEachVariable(t *testing.T) {
	s := settings{}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	envflag.Register(fs, &s, envflag.Options{Prefix: "T_", Docs: docs})
	var out bytes.Buffer
	fs.SetOutput(&out)
	fs.PrintDefaults()
	for flagName, variable := range map[string]string{"addr": "T_ADDR", "verbose": "T_VERBOSE", "size": "T_SIZE", "ratio": "T_RATIO",
		"wait": "T_WAIT", "hosts": "T_HOSTS", "allow": "T_ALLOW", "depth": "T_DEPTH", "turns": "T_TURNS"} {
		f := fs.Lookup(flagName)
		if f == nil {
			t.Errorf("no flag -%s", flagName)
			continue
		}
		if !strings.HasSuffix(f.Usage, "(env "+variable+")") {
			t.Errorf("-%s: usage %q does not end with its variable %s", flagName, f.Usage, variable)
		}
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n != 9 || strings.Contains(out.String(), "SECRET") {
		t.Errorf("%d flags, want 9, and none for the secret:\n%s", n, out.String())
	}
}

// TestEnvErrorNamesTheVariable: a variable that does not parse is named, with what it should hold.
func TestEnvErrorNamesTheVariable(t *testing.T) {
	s := settings{}
	err := envflag.ParseEnv(&s, envflag.Options{Prefix: "T_", Environment: map[string]string{"T_SIZE": "big", "T_DEPTH": "x"}})
	if err == nil || !strings.Contains(err.Error(), "environment variable T_SIZE") || !strings.Contains(err.Error(), "want a int64") ||
		!strings.Contains(err.Error(), "environment variable T_DEPTH") {
		t.Errorf("error: %v", err)
	}
}

// grouped holds its settings in named struct fields, as an options value of parts does.
type grouped struct {
	Limits struct {
		Memory int64 `env:"MEMORY" flag:"memory" usage:"memory limit"`
	}
	Network struct {
		Allow string `env:"NET_ALLOW" flag:"net-allow" usage:"hosts"`
		Theirs
	}
}

// TestNamedStructFieldsAreFields: the fields of a named struct field are read from the environment and have flags,
// as those of an embedded one do, and a bad value names its variable.
func TestNamedStructFieldsAreFields(t *testing.T) {
	var g grouped
	o := envflag.Options{Prefix: "T_", Environment: map[string]string{"T_MEMORY": "5", "T_TURNS": "2"}, Docs: docs}
	if err := envflag.ParseEnv(&g, o); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	envflag.Register(fs, &g, o)
	if err := fs.Parse([]string{"-net-allow", "example.com", "-turns", "3"}); err != nil {
		t.Fatal(err)
	}
	if g.Limits.Memory != 5 || g.Network.Allow != "example.com" || g.Network.Turns != 3 {
		t.Errorf("got %+v", g)
	}
	o.Environment = map[string]string{"T_MEMORY": "lots"}
	if err := envflag.ParseEnv(&grouped{}, o); err == nil || !strings.Contains(err.Error(), "environment variable T_MEMORY") {
		t.Errorf("a bad value: %v; want it to name T_MEMORY", err)
	}
}
