package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/ciskip"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/moby/moby/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ociPackage is the part of deploy/mcpb/executor/server.json's container package a client runs.
type ociPackage struct {
	RegistryType     string `json:"registryType"`
	RuntimeArguments []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"runtimeArguments"`
	PackageArguments []struct {
		Name string `json:"name"`
	} `json:"packageArguments"`
}

// TestRegistryOCIPackageNamespaces runs the executor image as the MCP registry's container package says (docker run
// with server.json's runtime arguments, the workspace and the seccomp profile filled in as a client would) and checks
// that a command gets namespaces of its own: it does not see the executor's process. Positive control: the same run
// without the seccomp profile and systempaths=unconfined falls back, and the command sees the executor.
func TestRegistryOCIPackageNamespaces(t *testing.T) {
	const image = "goalbox/executor:latest"
	if os.Getuid() != 0 {
		ciskip.Skip(t, "needs root: the workspace must belong to the image's user 10001")
	}
	cli, err := client.New(client.FromEnv)
	if err == nil {
		defer cli.Close()
		_, err = cli.ImageInspect(context.Background(), image)
	}
	if err != nil {
		ciskip.Skipf(t, "the executor image %s (scripts/test.sh builds it): %v", image, err)
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(repo, "deploy", "mcpb", "executor", "server.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Packages []ociPackage `json:"packages"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var pkg *ociPackage
	for i := range doc.Packages {
		if doc.Packages[i].RegistryType == "oci" {
			pkg = &doc.Packages[i]
		}
	}
	if pkg == nil {
		t.Fatal("server.json has no container package")
	}
	ws := t.TempDir()
	if err := os.Chown(ws, 10001, 10001); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, keep func(value string) bool) string {
		args := []string{"run"}
		for _, a := range pkg.RuntimeArguments {
			if !keep(a.Value) {
				continue
			}
			args = append(args, a.Name)
			if a.Value != "" {
				v := strings.ReplaceAll(a.Value, "{workspace}", ws)
				args = append(args, strings.ReplaceAll(v, "{seccomp_profile}", filepath.Join(repo, "deploy", "seccomp-executor.json")))
			}
		}
		args = append(args, image)
		for _, a := range pkg.PackageArguments {
			args = append(args, a.Name)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "registry-oci", Version: "0"}, nil).Connect(context.Background(),
			&mcp.CommandTransport{Command: exec.Command("docker", args...)}, nil)
		if err != nil {
			t.Fatalf("docker %s: %v", strings.Join(args, " "), err)
		}
		defer cs.Close()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolRunCommand,
			Arguments: map[string]any{"command": `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < $f 2>/dev/null; echo; done | grep -c -- '-std[i]o'`}})
		if err != nil || res.IsError {
			t.Fatalf("run a command: %v %+v", err, res)
		}
		var out protocol.RunCommandOutput
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out.Stdout)
	}
	namespaceArgs := func(v string) bool { return strings.HasPrefix(v, "seccomp=") || v == "systempaths=unconfined" }
	if got := run(t, func(string) bool { return true }); got != "0" {
		t.Errorf("as the package says, a command sees %s processes of the executor (-stdio); want none: its own namespaces", got)
	}
	if got := run(t, func(v string) bool { return !namespaceArgs(v) }); got == "0" {
		t.Errorf("positive control: without the seccomp profile and systempaths=unconfined the command should see the executor (the fallback)")
	}
}
