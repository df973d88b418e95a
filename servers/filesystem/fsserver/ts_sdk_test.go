package fsserver_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
)

// tsSDKVersion is the TypeScript SDK the client test runs, pinned so that runs compare.
const tsSDKVersion = "1.32.2"

// cacheDir is where goalbox keeps what it installs once, as scripts/lib.sh says: $GOALBOX_CACHE_DIR, else
// /var/cache/goalbox for root and the user cache folder plus /goalbox for anyone else.
func cacheDir(t testing.TB) string {
	if d := os.Getenv("GOALBOX_CACHE_DIR"); d != "" {
		return d
	}
	if os.Getuid() == 0 {
		return "/var/cache/goalbox"
	}
	d, err := os.UserCacheDir()
	if err != nil {
		t.Skipf("no cache folder for the TypeScript SDK: %v", err)
	}
	return filepath.Join(d, "goalbox")
}

// tsSDK returns node and the folder of the TypeScript SDK package, installing it with npm into the cache folder the
// first time; it skips the test when Node or npm is missing or npm cannot install (offline).
func tsSDK(t *testing.T) (node, sdk string) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the TypeScript SDK client cannot run")
	}
	dir := filepath.Join(cacheDir(t), "ts-sdk-"+tsSDKVersion)
	sdk = filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")
	if _, err := os.Stat(filepath.Join(sdk, "dist", "esm", "client", "index.js")); err == nil {
		return node, sdk
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: the TypeScript SDK cannot be installed")
	}
	must(t, os.MkdirAll(dir, 0o755))
	install := exec.Command(npm, "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error", "@modelcontextprotocol/sdk@"+tsSDKVersion)
	if out, err := install.CombinedOutput(); err != nil {
		t.Skipf("npm could not install @modelcontextprotocol/sdk@%s (offline?): %v\n%s", tsSDKVersion, err, out)
	}
	return node, sdk
}

// tsContent is a content item as the TypeScript client returns it.
type tsContent struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
}

type tsResult struct {
	IsError           bool            `json:"isError"`
	Content           []tsContent     `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
}

// TestTypeScriptSDKClient: the official TypeScript SDK client, which validates structuredContent against the
// declared output schema, gets an image as image content with its exact bytes, moves random bytes through a
// base64 write and read unchanged, and sees a binary file read as text refused with the option named.
func TestTypeScriptSDKClient(t *testing.T) {
	node, sdk := tsSDK(t)
	ws := t.TempDir()
	png := encodePNG(t, 12, 8)
	must(t, os.WriteFile(filepath.Join(ws, "plot.png"), png, 0o644))
	_, run := startHTTP(t, ws, setup{}, mcpserve.Config{})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	script, err := filepath.Abs(filepath.Join("testdata", "ts_client.mjs"))
	must(t, err)
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(os.Environ(), "TS_SDK_DIR="+sdk, "MCP_URL="+run.URL)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client failed: %v\n%s", err, stderr.String())
	}
	var got struct {
		Image, Write, ReadBack, BinaryAsText tsResult
		SHA256                               string `json:"sha256"`
		RoundTripEqual                       bool   `json:"roundTripEqual"`
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("the TypeScript client's output: %v\n%s", err, stdout)
	}

	img := got.Image
	if img.IsError || len(img.Content) != 2 || img.Content[0].Type != "text" || img.Content[1].Type != "image" {
		t.Fatalf("image read: %+v", img)
	}
	if data, err := base64.StdEncoding.DecodeString(img.Content[1].Data); err != nil || !bytes.Equal(data, png) || img.Content[1].MimeType != "image/png" {
		t.Errorf("image content: %s, %d bytes (%v); want image/png, the file's %d bytes", img.Content[1].MimeType, len(data), err, len(png))
	}
	// The description is the text; no structuredContent (Codex would show it in place of the image), which the SDK
	// takes because sandbox_read_file declares no output schema (mcpserve.NoOutputSchema).
	var desc map[string]any
	must(t, json.Unmarshal([]byte(img.Content[0].Text), &desc))
	if desc["path"] != "plot.png" || desc["mime_type"] != "image/png" || desc["size"] != float64(len(png)) || desc["width"] != 12.0 || desc["height"] != 8.0 || len(img.StructuredContent) != 0 {
		t.Errorf("image description %s, structuredContent %s", img.Content[0].Text, img.StructuredContent)
	}

	if got.Write.IsError || !strings.Contains(string(got.Write.StructuredContent), `"bytes_written":200000`) {
		t.Errorf("base64 write: %+v", got.Write)
	}
	onDisk, err := os.ReadFile(filepath.Join(ws, "random.bin"))
	must(t, err)
	if sum := sha256.Sum256(onDisk); hex.EncodeToString(sum[:]) != got.SHA256 {
		t.Errorf("the file on disk (%d bytes) is not the bytes the client sent", len(onDisk))
	}
	if got.ReadBack.IsError || !got.RoundTripEqual {
		t.Errorf("base64 read back: equal %v, %+v", got.RoundTripEqual, got.ReadBack.StructuredContent)
	}
	if b := got.BinaryAsText; !b.IsError || len(b.Content) != 1 || !strings.Contains(b.Content[0].Text, `encoding "base64"`) {
		t.Errorf("a binary file read as text: %+v", b)
	}
}
