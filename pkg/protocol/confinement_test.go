package protocol

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// textFields are the confinement report's only string fields: names and values a program may look up (an image,
// a user, a path, a variable's or a property's name) and text for people, which nothing decides on. Every other
// field is an enumeration, a number or a flag, so a decision that matched a word of a sentence does not compile.
// A new string field fails TestConfinementDecisionsReadNoText until it is either made typed or listed here with
// why it is not a decision.
var textFields = map[string]string{
	"EgressHealth.Allow":              "hosts, as given to -net-allow",
	"EgressHealth.Proxy":              "an address",
	"EgressHealth.Secrets":            "NAME@host pairs",
	"SandboxPolicy.Summary":           "for people",
	"SandboxPolicy.ReadPaths":         "paths",
	"SandboxPolicy.WritePaths":        "paths",
	"SandboxPolicy.Protected":         "patterns",
	"SandboxPolicy.User":              "uid:gid",
	"Property.Name":                   "a stable key of SECURITY.md's table",
	"Property.Note":                   "for people",
	"LocalConfinement.WriteDirs":      "paths",
	"LocalConfinement.ReadDirs":       "paths",
	"LocalConfinement.Rlimits":        "map keys: the limits' names",
	"LocalConfinement.EnvAllowlist":   "variable names",
	"LocalConfinement.Warnings":       "for people",
	"CgroupLimit.Note":                "for people",
	"DockerConfinement.BackendName":   "a backend's name",
	"DockerConfinement.Engine":        "a version",
	"DockerConfinement.APIVersion":    "a version",
	"DockerConfinement.Image":         "an image reference",
	"DockerConfinement.User":          "uid:gid",
	"DockerConfinement.Workspace":     "a path",
	"DockerConfinement.CacheDir":      "a path",
	"DockerConfinement.LeftoverLabel": "a label selector",
	"DockerConfinement.Instance":      "an instance label",
	"DockerConfinement.Env":           "variable names",
}

// TestConfinementDecisionsReadNoText walks the report's types: every string in them is one of textFields, every
// enumeration marshals to its word and back, and a report never filled in says "unknown" where it would otherwise
// promise something. The compiler does the rest: enumerations are integers, so strings.Contains, HasPrefix or ==
// with a word of a sentence cannot be written on them.
func TestConfinementDecisionsReadNoText(t *testing.T) {
	textMarshaler := reflect.TypeFor[encoding.TextMarshaler]()
	seen := map[string]bool{}
	var walk func(path string, typ reflect.Type)
	walk = func(path string, typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		switch {
		case typ.Implements(textMarshaler):
			if typ.Kind() == reflect.String {
				t.Errorf("%s: enumeration %s is a string; make it an integer so a word cannot be compared with it", path, typ)
			}
			return
		case typ.Kind() == reflect.Map && typ.Key().Kind() == reflect.String && typ.Elem().Kind() != reflect.String:
			seen[path] = true
			if _, ok := textFields[path]; !ok {
				t.Errorf("%s: a map keyed by text is not in textFields", path)
			}
			return
		case typ.Kind() == reflect.String || typ.Kind() == reflect.Map:
			seen[path] = true
			if _, ok := textFields[path]; !ok {
				t.Errorf("%s is a string: a decision on it would read text. Make it an enumeration (confinement.go), a number "+
					"or a flag, or list it in textFields saying why nothing decides on it", path)
			}
			return
		case typ.Kind() != reflect.Struct:
			return
		}
		for f := range typ.Fields() {
			walk(typ.Name()+"."+f.Name, f.Type)
		}
	}
	walk("Confinement", reflect.TypeFor[Confinement]())
	for f := range textFields {
		if !seen[f] {
			t.Errorf("textFields lists %s, which the report does not have", f)
		}
	}

	// A report never filled in promises nothing.
	empty, err := json.Marshal(Confinement{LocalConfinement: &LocalConfinement{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"network":"unknown"`, `"capabilities":"unknown"`, `"mode":"unknown"`, `"landlock":"unknown"`} {
		if !strings.Contains(string(empty), key) {
			t.Errorf("an empty report does not say %s: %s", key, empty)
		}
	}
}

// TestConfinementWords: every value of every enumeration marshals to its own word and back; a word no value has is
// refused naming the words there are; and a value past the list does not marshal.
func TestConfinementWords(t *testing.T) {
	check := func(name string, words []string, roundTrip func(i int) (string, int, error)) {
		t.Helper()
		seen := map[string]bool{}
		for i, w := range words {
			got, back, err := roundTrip(i)
			if err != nil || got != w || back != i {
				t.Errorf("%s %d: marshalled %q and read back %d (%v), want %q", name, i, got, back, err, w)
			}
			if seen[w] {
				t.Errorf("%s: word %q twice", name, w)
			}
			seen[w] = true
		}
		if _, _, err := roundTrip(len(words)); err == nil {
			t.Errorf("%s: value %d past its words marshalled", name, len(words))
		}
	}
	check("ProcessIsolation", processIsolationWords, roundTrip[ProcessIsolation])
	check("LandlockState", landlockWords, roundTrip[LandlockState])
	check("NetworkConfinement", networkWords, roundTrip[NetworkConfinement])
	check("Capabilities", capabilitiesWords, roundTrip[Capabilities])
	check("Hidden", hiddenWords, roundTrip[Hidden])
	check("SeccompProfile", seccompWords, roundTrip[SeccompProfile])
	check("ProtectedEnforcement", protectedWords, roundTrip[ProtectedEnforcement])
	check("RootKind", rootWords, roundTrip[RootKind])
	check("SandboxNetwork", sandboxNetworkWords, roundTrip[SandboxNetwork])
	check("BackendRule", backendRuleWords, roundTrip[BackendRule])

	var l LocalConfinement
	err := json.Unmarshal([]byte(`{"landlock":"enforced (ABI 7)"}`), &l)
	if err == nil || !strings.Contains(err.Error(), `landlock "enforced (ABI 7)" is not one of unknown, enforced, unavailable, off`) {
		t.Errorf("a sentence where a word belongs: %v", err)
	}
}

// roundTrip marshals value i of E and reads the word back.
func roundTrip[E interface {
	~uint8
	encoding.TextMarshaler
}, P interface {
	*E
	encoding.TextUnmarshaler
}](i int) (string, int, error) {
	b, err := E(i).MarshalText()
	if err != nil {
		return "", 0, err
	}
	var back E
	if err := P(&back).UnmarshalText(b); err != nil {
		return string(b), 0, err
	}
	return string(b), int(back), nil
}
