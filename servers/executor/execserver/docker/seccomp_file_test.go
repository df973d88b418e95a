//go:build linux

package docker

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSeccompProfileFile: deploy/seccomp.json, the profile compose gives both servers' containers, is the
// backend's profile. GOALBOX_UPDATE_SECCOMP=1 rewrites it.
func TestSeccompProfileFile(t *testing.T) {
	want, err := SeccompProfileJSON()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "..", "..", "deploy", "seccomp.json")
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
