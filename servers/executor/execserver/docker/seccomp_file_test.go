//go:build linux

package docker

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSeccompProfileFile: deploy/seccomp.json, the profile compose gives the filesystem container, is the backend's
// profile, and deploy/seccomp-executor.json, the executor container's, the namespaces profile. GOALBOX_UPDATE_SECCOMP=1
// rewrites them.
func TestSeccompProfileFile(t *testing.T) {
	for file, build := range map[string]func() ([]byte, error){
		"seccomp.json":          SeccompProfileJSON,
		"seccomp-executor.json": NamespacesSeccompProfileJSON,
	} {
		t.Run(file, func(t *testing.T) { checkProfileFile(t, file, build) })
	}
}

func checkProfileFile(t *testing.T, file string, build func() ([]byte, error)) {
	want, err := build()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "..", "..", "deploy", file)
	if os.Getenv("GOALBOX_UPDATE_SECCOMP") == "1" {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not the backend's seccomp profile: run GOALBOX_UPDATE_SECCOMP=1 go test -run TestSeccompProfileFile ./execserver/docker", path)
	}
}
