package main

import (
	"bytes"
	"errors"
	"flag"
	"reflect"
	"strings"
	"testing"
)

// TestUsageListsEachVariable: the usage names, for every setting of options (loop.Limits and BenchOptions
// included), its environment variable beside its flag; only the secrets are environment-only.
func TestUsageListsEachVariable(t *testing.T) {
	var out bytes.Buffer
	if _, err := parseOptions([]string{"-h"}, map[string]string{}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
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
				t.Errorf("%s: the usage does not name %s", f.Name, v)
			}
		}
	}
	walk(reflect.TypeFor[options]())
	if strings.Contains(out.String(), "OPENAI_API_KEY)") {
		t.Errorf("the API key has a flag:\n%s", out.String())
	}
}
