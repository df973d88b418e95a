package main

import (
	"bytes"
	"errors"
	"flag"
	"reflect"
	"strings"
	"testing"
)

// TestUsageListsEachVariable: each program's usage names, for every setting of its options (the embedded parts
// and loop.Limits included), its environment variable beside its flag; only the secrets are environment-only.
func TestUsageListsEachVariable(t *testing.T) {
	for _, p := range programs {
		var out bytes.Buffer
		if code := run(t.Context(), []string{"-" + p.flag, "-h"}, map[string]string{}, nil, &out, &out); code != exitMet {
			t.Fatalf("-%s -h: exit %d", p.flag, code)
		}
		envOnly := map[string]bool{"OPENAI_API_KEY": true, "GOALBOX_FS_TOKEN": true, "GOALBOX_EXEC_TOKEN": true}
		var walk func(reflect.Type)
		walk = func(rt reflect.Type) {
			for f := range rt.Fields() {
				if f.Anonymous {
					walk(f.Type)
					continue
				}
				v := f.Tag.Get("env")
				if v == "" || envOnly[v] {
					continue
				}
				if !strings.Contains(out.String(), "(env "+v+")") {
					t.Errorf("-%s: %s: the usage does not name %s", p.flag, f.Name, v)
				}
			}
		}
		walk(reflect.TypeOf(p.defaults()).Elem())
		if strings.Contains(out.String(), "OPENAI_API_KEY)") {
			t.Errorf("-%s: the API key has a flag:\n%s", p.flag, out.String())
		}
	}
}

// TestEachProgramShowsOnlyItsOwnFlags: -h of a program lists its flags and no other program's; -h alone lists the
// three programs.
func TestEachProgramShowsOnlyItsOwnFlags(t *testing.T) {
	help := func(args ...string) string {
		var out bytes.Buffer
		if code := run(t.Context(), args, map[string]string{}, nil, &out, &out); code != exitMet {
			t.Fatalf("%v: exit %d\n%s", args, code, out.String())
		}
		return out.String()
	}
	for _, c := range []struct {
		args       []string
		has, lacks []string
	}{
		{[]string{"-h"}, []string{"-goal ", "-benchmarks ", "-selftest ", "-benchmarks -h"}, []string{"-verify", "-tries"}},
		{[]string{"-goal", "-h"}, []string{"-verify", "-fs-url", "-max-turns", "-model", "-backend", "-token"}, []string{"-tries", "-sandbox-pool", "-benchmarks-dir", "-results"}},
		{[]string{"-benchmarks", "--help"}, []string{"-tries", "-sandbox-pool", "-max-turns", "-model", "-results", "-token"}, []string{"-verify", "-fs-url", "-backend", "-plan", "-goal"}},
		{[]string{"-selftest", "-h"}, []string{"-sandbox-pool", "-benchmarks-dir", "-grade-timeout", "-threads"}, []string{"-model", "-max-turns", "-tries", "-verify"}},
	} {
		out := help(c.args...)
		for _, s := range c.has {
			if !strings.Contains(out, s) {
				t.Errorf("%v does not show %q:\n%s", c.args, s, out)
			}
		}
		for _, s := range c.lacks {
			if strings.Contains(out, "  "+s+" ") || strings.Contains(out, "  "+s+"\n") {
				t.Errorf("%v shows %q, another program's:\n%s", c.args, s, out)
			}
		}
	}
}

// TestAFlagOfAnotherProgramIsNamed: a flag of another program is a usage error naming each such flag and the
// programs it belongs to, and it takes its value as it would there.
func TestAFlagOfAnotherProgramIsNamed(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-selftest", "-model", "m", "-approve", "-tries", "3"}, "-model belongs to the goal mode (-goal) and -benchmarks; -approve belongs to the goal mode (-goal); -tries belongs to -benchmarks; go run ./agent -selftest -h lists the flags of -selftest"},
		{[]string{"-goal", "g", "-results", "r"}, "-results belongs to -benchmarks and -selftest;"},
		{[]string{"-selftest", "-goal", "g"}, "-selftest and -goal exclude each other"},
	} {
		_, err := parseSelfTestOptions(c.args, map[string]string{}, new(bytes.Buffer))
		if c.args[0] == "-goal" {
			_, err = parseGoalOptions(c.args, map[string]string{}, new(bytes.Buffer))
		}
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
	if _, err := parseGoalOptions([]string{"-goal", "g", "-h"}, map[string]string{}, new(bytes.Buffer)); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-goal g -h: %v, want the help", err)
	}
}

// TestTheEnvironmentChoosesABenchmarkProgram: without a program's flag, GOALBOX_BENCHMARKS or GOALBOX_SELFTEST
// chooses it; a flag on the command line wins.
func TestTheEnvironmentChoosesABenchmarkProgram(t *testing.T) {
	for _, c := range []struct {
		args    []string
		environ map[string]string
		want    *program
	}{
		{nil, map[string]string{}, goalProgram},
		{[]string{"-languages", "go"}, map[string]string{"GOALBOX_SELFTEST": "true"}, selfTestProgram},
		{nil, map[string]string{"GOALBOX_BENCHMARKS": "1", "GOALBOX_SELFTEST": "false"}, benchmarkProgram},
		{[]string{"-goal", "g"}, map[string]string{"GOALBOX_BENCHMARKS": "true"}, goalProgram},
	} {
		if p, err := chooseProgram(c.args, c.environ); err != nil || p != c.want {
			t.Errorf("%v %v: %v, %v; want %s", c.args, c.environ, p, err, c.want.name)
		}
	}
	if _, err := chooseProgram(nil, map[string]string{"GOALBOX_BENCHMARKS": "1", "GOALBOX_SELFTEST": "1"}); !errors.Is(err, errUsage) {
		t.Errorf("both in the environment: %v", err)
	}
}

// A mistyped flag is answered in a line, with the flags it may have meant, not with the whole list.
func TestAMistypedFlagIsAnsweredInALine(t *testing.T) {
	var stdout, stderr strings.Builder
	code := run(t.Context(), []string{"-goal", "x", "-verfy", "true"}, map[string]string{}, strings.NewReader(""), &stdout, &stderr)
	out := stderr.String() + stdout.String()
	if code != exitError || strings.Count(out, "\n") > 2 || !strings.Contains(out, "-verfy") || !strings.Contains(out, "did you mean -verify?") {
		t.Errorf("exit %d, %d lines:\n%s", code, strings.Count(out, "\n"), out)
	}
}
