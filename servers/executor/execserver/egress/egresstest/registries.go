//go:build linux

package egresstest

// Static package registries an upstream serves, for the package managers of the egress tests.

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// GoModule is the one-file module GoProxy serves, at v1.0.0.
const GoModule = "example.test/hello"

func moduleZip(t testing.TB) []byte {
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for name, body := range map[string]string{"go.mod": "module " + GoModule + "\n\ngo 1.21\n", "hello.go": "package hello\n\nconst Hello = \"hi\"\n"} {
		w, err := z.Create(GoModule + "@v1.0.0/" + name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, body)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// PyPIIndex serves a one-wheel package index as a static PEP 503 "simple" index would.
func PyPIIndex(t testing.TB) http.Handler {
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	files := map[string]string{
		"goalbox_hello/__init__.py":            "HELLO = 'hi'\n",
		"goalbox_hello-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: goalbox-hello\nVersion: 1.0\n",
		"goalbox_hello-1.0.dist-info/WHEEL":    "Wheel-Version: 1.0\nGenerator: goalbox-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
	}
	var record strings.Builder
	for _, name := range []string{"goalbox_hello/__init__.py", "goalbox_hello-1.0.dist-info/METADATA", "goalbox_hello-1.0.dist-info/WHEEL"} {
		w, _ := z.Create(name)
		io.WriteString(w, files[name])
		fmt.Fprintf(&record, "%s,,\n", name)
	}
	w, _ := z.Create("goalbox_hello-1.0.dist-info/RECORD")
	io.WriteString(w, record.String()+"goalbox_hello-1.0.dist-info/RECORD,,\n")
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	wheel := buf.Bytes()
	const file = "goalbox_hello-1.0-py3-none-any.whl"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/simple/goalbox-hello/":
			fmt.Fprintf(w, `<!DOCTYPE html><html><body><a href="/files/%s">%s</a></body></html>`, file, file)
		case "/files/" + file:
			w.Write(wheel)
		default:
			http.NotFound(w, r)
		}
	})
}

// GoProxy serves the module as a static GOPROXY would (the files of $GOPROXY/<module>/@v/).
func GoProxy(t testing.TB) http.Handler {
	files := map[string][]byte{
		"/" + GoModule + "/@v/list":        []byte("v1.0.0\n"),
		"/" + GoModule + "/@v/v1.0.0.info": []byte(`{"Version":"v1.0.0","Time":"2025-01-01T00:00:00Z"}`),
		"/" + GoModule + "/@v/v1.0.0.mod":  []byte("module " + GoModule + "\n\ngo 1.21\n"),
		"/" + GoModule + "/@v/v1.0.0.zip":  moduleZip(t),
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	})
}
