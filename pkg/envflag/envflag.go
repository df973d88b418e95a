// Package envflag owns how goalbox's commands take their settings: one struct, each field tagged with its
// environment variable (env, read by caarlos0/env), its flag name (flag) and its usage (usage). ParseEnv fills the
// struct from the environment; Register then adds a flag for each field, with the value the environment gave as
// its default, so a flag given on the command line wins; the usage text names each flag's variable, generated, so
// it cannot drift from the variable that is really read.
//
//	type options struct {
//		Addr  string   `env:"ADDR" flag:"addr" usage:"HTTP listen address"`
//		Allow []string `env:"ALLOW" envSeparator:"\n" flag:"allow" flagList:"repeat" usage:"RE2 pattern; repeatable"`
//	}
//
// A []string flag takes a comma-separated list that replaces the value, or with flagList:"repeat" adds one item
// per use. The fields of a struct field (embedded or named, as caarlos0/env reads them) are fields of the struct,
// so that one options value can group its settings and still be filled in place; a field with no usage has no
// flag (a secret that must not show in ps is read from the environment only).
package envflag

import (
	"errors"
	"flag"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// Options say where the variables are and what the struct's tags cannot.
type Options struct {
	// Prefix goes before every env tag (GOALBOX_FS_ for the filesystem server).
	Prefix string
	// Environment, when not nil, is read instead of the process's environment (tests).
	Environment map[string]string
	// Docs are the flag name and usage of fields whose struct belongs to another package and carries only env tags,
	// by Go field name.
	Docs map[string]Doc
}

// Doc is a field's flag name and usage, where its struct cannot carry them.
type Doc struct{ Flag, Usage string }

// ParseEnv fills v, a pointer to a struct, from the environment, over the values it already holds. An error names
// each variable that could not be read and what it should hold.
func ParseEnv(v any, o Options) error {
	err := env.ParseWithOptions(v, env.Options{Prefix: o.Prefix, Environment: o.Environment})
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return err
	}
	var msgs []string
	for _, e := range agg.Errors {
		var pe env.ParseError
		if !errors.As(e, &pe) {
			msgs = append(msgs, e.Error())
			continue
		}
		if f, ok := fieldByName(reflect.TypeOf(v).Elem(), pe.Name); ok {
			msgs = append(msgs, fmt.Sprintf("environment variable %s%s: %v (want a %s)", o.Prefix, f.Tag.Get("env"), pe.Err, pe.Type))
			continue
		}
		msgs = append(msgs, e.Error())
	}
	return errors.New(strings.Join(msgs, "; "))
}

// fieldByName finds the field name in the struct type t or in the structs it holds, as ParseEnv reads them.
func fieldByName(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Name == name && f.Tag.Get("env") != "" {
			return f, true
		}
		if f.Type.Kind() == reflect.Struct {
			if nested, ok := fieldByName(f.Type, name); ok {
				return nested, true
			}
		}
	}
	return reflect.StructField{}, false
}

// Register adds to fs a flag for each field of v (a pointer to a struct) that has a usage, its default the value v
// holds now. The usage ends with the field's variable: "HTTP listen address (env GOALBOX_FS_ADDR)".
func Register(fs *flag.FlagSet, v any, o Options) {
	register(fs, reflect.ValueOf(v).Elem(), o)
}

func register(fs *flag.FlagSet, s reflect.Value, o Options) {
	for i := range s.NumField() {
		f, fv := s.Type().Field(i), s.Field(i)
		if f.IsExported() && f.Type.Kind() == reflect.Struct && f.Tag.Get("flag") == "" {
			register(fs, fv, o)
			continue
		}
		name, usage := f.Tag.Get("flag"), f.Tag.Get("usage")
		if d, ok := o.Docs[f.Name]; ok {
			name, usage = d.Flag, d.Usage
		}
		if usage == "" || !f.IsExported() {
			continue
		}
		if name == "" {
			panic(fmt.Sprintf("envflag: field %s has a usage but no flag name", f.Name))
		}
		if e := f.Tag.Get("env"); e != "" {
			usage += " (env " + o.Prefix + e + ")"
		}
		if err := define(fs, name, usage, fv.Addr().Interface(), f.Tag.Get("flagList") == "repeat"); err != nil {
			panic(fmt.Sprintf("envflag: field %s: %v", f.Name, err))
		}
	}
}

// define adds the flag for the field at p.
func define(fs *flag.FlagSet, name, usage string, p any, repeat bool) error {
	switch p := p.(type) {
	case *string:
		fs.StringVar(p, name, *p, usage)
	case *bool:
		fs.BoolVar(p, name, *p, usage)
	case *int:
		fs.IntVar(p, name, *p, usage)
	case *int64:
		fs.Int64Var(p, name, *p, usage)
	case *float64:
		fs.Float64Var(p, name, *p, usage)
	case *time.Duration:
		fs.DurationVar(p, name, *p, usage)
	case *[]string:
		if repeat {
			fs.Func(name, usage, func(s string) error { *p = append(*p, s); return nil })
		} else {
			fs.Func(name, usage, func(s string) error { *p = SplitList(s); return nil })
		}
	default:
		return fmt.Errorf("no flag for a %T", p)
	}
	return nil
}

// SplitList splits a comma-separated value, trimming each item and dropping empty ones.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// PositiveOr sets *v to def unless it is positive: the default of a limit whose zero or negative value means unset.
func PositiveOr[T int | int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
