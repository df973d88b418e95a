//go:build unix

package fsserver_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/color"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readImage reads path, which must be an image, and checks what every image read keeps: the JSON text first, the
// same JSON as structuredContent (valid against the declared output schema), then the image content item.
func readImage(t *testing.T, cs *mcp.ClientSession, args map[string]any) (protocol.ReadFileImageOutput, *mcp.ImageContent) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolReadFile, Arguments: args})
	if err != nil {
		t.Fatalf("read %v: %v", args, err)
	}
	if res.IsError || len(res.Content) != 2 {
		t.Fatalf("read %v: want the JSON text and the image, got isError=%v and %d content items: %+v", args, res.IsError, len(res.Content), res.Content)
	}
	text, isText := res.Content[0].(*mcp.TextContent)
	img, isImage := res.Content[1].(*mcp.ImageContent)
	if !isText || !isImage {
		t.Fatalf("read %v: content is %T, %T; want text, then image", args, res.Content[0], res.Content[1])
	}
	// No structuredContent: Codex would show it to its model in place of the image (mcpserve.NoOutputSchema).
	// The description is the text, in the shape the tool documents.
	if res.StructuredContent != nil {
		t.Errorf("read %v: an image result with structuredContent %v", args, res.StructuredContent)
	}
	raw := []byte(text.Text)
	var fromText any
	must(t, json.Unmarshal(raw, &fromText))
	if err := outputSchema(t, cs, protocol.ToolReadFile).Validate(fromText); err != nil {
		t.Errorf("read %v: the description does not match the documented shapes: %v: %s", args, err, raw)
	}
	var out protocol.ReadFileImageOutput
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	must(t, dec.Decode(&out))
	return out, img
}

// TestReadImage: PNG, JPEG, GIF and WebP files, known by their content whatever their names, come back whole as
// MCP image content with their MIME type, described by {path, mime_type, size, width, height}; a file that only
// starts like an image, or one over the cap, is refused with what to do instead.
func TestReadImage(t *testing.T) {
	s := setup{}
	s.opts.MaxBinaryReadBytes = 64 << 10
	pngData := encodePNG(t, 7, 5)
	images := []struct {
		name, mime    string
		data          []byte
		width, height int
	}{
		{"plot.png", "image/png", pngData, 7, 5},
		{"photo.jpg", "image/jpeg", encodeJPEG(t, 9, 4), 9, 4},
		{"anim.gif", "image/gif", encodeGIF(t, 3, 8), 3, 8},
		{"icon.webp", "image/webp", encodeWebP(6, 2, color.RGBA{R: 200, G: 10, B: 99, A: 255}), 6, 2},
		{"no-extension", "image/png", pngData, 7, 5},
		{"misnamed.txt", "image/jpeg", encodeJPEG(t, 2, 2), 2, 2},
	}
	eachTransport(t, s, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		for _, im := range images {
			must(t, os.WriteFile(filepath.Join(ws, im.name), im.data, 0o644))
			out, img := readImage(t, cs, map[string]any{"path": im.name})
			want := protocol.ReadFileImageOutput{Path: im.name, MimeType: im.mime, Size: int64(len(im.data)), Width: im.width, Height: im.height}
			if out != want {
				t.Errorf("%s: got %+v, want %+v", im.name, out, want)
			}
			if img.MIMEType != im.mime || !bytes.Equal(img.Data, im.data) {
				t.Errorf("%s: image content %s of %d bytes, want %s of the file's %d bytes", im.name, img.MIMEType, len(img.Data), im.mime, len(im.data))
			}
		}
		// encoding text is the default: an image is still an image.
		if out, _ := readImage(t, cs, map[string]any{"path": "plot.png", "encoding": "text"}); out.MimeType != "image/png" {
			t.Errorf("encoding text: %+v", out)
		}
		// A name is not content: a text file called .png is read as text.
		files(t, ws, map[string]string{"notes.png": "just text\n"})
		if got := ok[readOut](t, cs, protocol.ToolReadFile, map[string]any{"path": "notes.png"}); got.Content != "just text\n" {
			t.Errorf("a text file named .png: %+v", got)
		}
		// base64 gives an image's bytes, not the image.
		if got := ok[protocol.ReadFileBase64Output](t, cs, protocol.ToolReadFile, map[string]any{"path": "plot.png", "encoding": "base64"}); got.Content != base64.StdEncoding.EncodeToString(pngData) {
			t.Errorf("base64 read of an image: %+v", got)
		}

		must(t, os.WriteFile(filepath.Join(ws, "cut.png"), pngData[:len(pngData)-20], 0o644))
		must(t, os.WriteFile(filepath.Join(ws, "header-only.gif"), []byte("GIF89a\x01"), 0o644))
		must(t, os.WriteFile(filepath.Join(ws, "cut.webp"), encodeWebP(4, 4, color.RGBA{A: 255})[:24], 0o644))
		must(t, os.WriteFile(filepath.Join(ws, "huge.png"), append(bytes.Clone(pngData), make([]byte, 64<<10)...), 0o644))
		fails(t, cs, protocol.ToolReadFile, map[string]any{"path": "cut.png"}, `read "cut.png": refused`, "binary", "PNG", "IEND", `encoding "base64"`)
		fails(t, cs, protocol.ToolReadFile, map[string]any{"path": "header-only.gif"}, "binary", "GIF", "header", `encoding "base64"`)
		fails(t, cs, protocol.ToolReadFile, map[string]any{"path": "cut.webp"}, "binary", "WEBP", "cut short", `encoding "base64"`)
		fails(t, cs, protocol.ToolReadFile, map[string]any{"path": "huge.png"}, `read "huge.png": refused`,
			fmt.Sprintf("%d bytes", len(pngData)+64<<10), "too large", "at most 64 KiB", "smaller copy")
	})
}

// randomBytes are n random bytes that include every byte value.
func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(1, uint64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	for i := range min(n, 256) {
		b[i] = byte(i)
	}
	return b
}

// TestBase64RoundTrip: random bytes written with encoding base64 land on disk byte for byte and read back the
// same, over both transports with the go-sdk client; unpadded and line-wrapped base64 is accepted.
func TestBase64RoundTrip(t *testing.T) {
	s := setup{}
	s.guard.MaxWriteBytes = 1 << 20
	s.opts.MaxBinaryReadBytes = 1 << 20
	eachTransport(t, s, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		type wout = protocol.WriteFileOutput
		type bout = protocol.ReadFileBase64Output
		for _, n := range []int{0, 1, 2, 3, 255, 256, 300_001, 1 << 20} {
			data := randomBytes(n)
			name := fmt.Sprintf("bin/random-%d.dat", n)
			enc := base64.StdEncoding.EncodeToString(data)
			if got := ok[wout](t, cs, protocol.ToolWriteFile, map[string]any{"path": name, "content": enc, "encoding": "base64"}); got != (wout{Path: name, BytesWritten: n, Created: true}) {
				t.Errorf("write %d bytes: %+v", n, got)
			}
			if onDisk := readHost(t, filepath.Join(ws, name)); onDisk != string(data) {
				t.Errorf("%d bytes: the file on disk differs (%d bytes)", n, len(onDisk))
			}
			got := ok[bout](t, cs, protocol.ToolReadFile, map[string]any{"path": name, "encoding": "base64"})
			back, err := base64.StdEncoding.DecodeString(got.Content)
			if err != nil || !bytes.Equal(back, data) || got.Size != int64(n) || got.Encoding != "base64" || got.Path != name {
				t.Errorf("read %d bytes back: %d bytes, equal %v, %+v, %v", n, len(back), bytes.Equal(back, data), got.Size, err)
			}
		}
		data := randomBytes(1000)
		var wrapped strings.Builder
		for enc := base64.StdEncoding.EncodeToString(data); enc != ""; enc = enc[min(76, len(enc)):] {
			wrapped.WriteString(enc[:min(76, len(enc))] + "\r\n")
		}
		for label, enc := range map[string]string{"unpadded": base64.RawStdEncoding.EncodeToString(data), "wrapped": wrapped.String()} {
			ok[wout](t, cs, protocol.ToolWriteFile, map[string]any{"path": label + ".dat", "content": enc, "encoding": "base64"})
			if readHost(t, filepath.Join(ws, label+".dat")) != string(data) {
				t.Errorf("%s base64: the file on disk differs", label)
			}
		}
		// Without encoding, content is text: the same string is stored as it is.
		ok[wout](t, cs, protocol.ToolWriteFile, map[string]any{"path": "as-text.txt", "content": "AAEC"})
		if readHost(t, filepath.Join(ws, "as-text.txt")) != "AAEC" {
			t.Error("a write without encoding decoded its content")
		}
		// A binary file read as text is refused, and the error names the option.
		fails(t, cs, protocol.ToolReadFile, map[string]any{"path": "bin/random-256.dat"}, "binary", "NUL", `encoding "base64"`)
		fails(t, cs, protocol.ToolReadFile, map[string]any{"path": "bin/random-256.dat", "encoding": "base64", "limit": 10}, "offset and limit", "leave them out")
	})
}

// TestBase64WriteLimits: the write limit and the disk cap count the decoded bytes, not the base64; bad base64 and
// unknown encodings are refused with what is allowed, and leave no file.
func TestBase64WriteLimits(t *testing.T) {
	s := setup{}
	s.guard.MaxWriteBytes = 1000
	s.opts.MaxBinaryReadBytes = 999
	eachTransport(t, s, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		type wout = protocol.WriteFileOutput
		b64 := func(n int) string { return base64.StdEncoding.EncodeToString(randomBytes(n)) }
		// 1000 bytes are 1336 base64 characters, more than the limit: the decoded size is what counts.
		if got := ok[wout](t, cs, protocol.ToolWriteFile, map[string]any{"path": "max.dat", "content": b64(1000), "encoding": "base64"}); got.BytesWritten != 1000 {
			t.Errorf("1000 bytes: %+v", got)
		}
		fails(t, cs, protocol.ToolWriteFile, map[string]any{"path": "over.dat", "content": b64(1001), "encoding": "base64"},
			`write "over.dat"`, "too large", "1001 bytes; the limit is 1000")
		// The binary read cap: 1000 bytes are one more than a base64 read returns.
		fails(t, cs, protocol.ToolReadFile, map[string]any{"path": "max.dat", "encoding": "base64"},
			`read "max.dat": refused, 1000 bytes`, "too large", "a base64 read returns the whole file, and at most 999 bytes")
		for _, bad := range []string{"AAEC-_8=", "AA EC", "A", "AAE=C", "Zm9v\x00"} {
			fails(t, cs, protocol.ToolWriteFile, map[string]any{"path": "bad.dat", "content": bad, "encoding": "base64"},
				"content is not valid base64", "standard alphabet A-Z a-z 0-9 + /", "= padding")
		}
		fails(t, cs, protocol.ToolWriteFile, map[string]any{"path": "bad.dat", "content": "AAEC", "encoding": "hex"}, "encoding", "text", "base64")
		fails(t, cs, protocol.ToolReadFile, map[string]any{"path": "max.dat", "encoding": "utf-16"}, "encoding", "text", "base64")
		if _, err := os.Stat(filepath.Join(ws, "bad.dat")); !os.IsNotExist(err) {
			t.Error("a refused write left bad.dat")
		}
	})

	// The disk cap, counted as du counts, applies to the decoded bytes too.
	probe := t.TempDir()
	var st syscall.Stat_t
	var fsst syscall.Statfs_t
	must(t, syscall.Stat(probe, &st))
	must(t, syscall.Statfs(probe, &fsst))
	empty, B := st.Blocks*512, int(fsst.Bsize)
	capped := setup{}
	capped.guard.MaxWorkspaceBytes = empty + int64(10*B)
	eachTransport(t, capped, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		b64 := func(n int) string { return base64.StdEncoding.EncodeToString(randomBytes(n)) }
		// 6 blocks are 8 blocks of base64; with 5 more blocks the decoded bytes would pass the cap.
		ok[protocol.WriteFileOutput](t, cs, protocol.ToolWriteFile, map[string]any{"path": "a.dat", "content": b64(6 * B), "encoding": "base64"})
		fails(t, cs, protocol.ToolWriteFile, map[string]any{"path": "b.dat", "content": b64(5 * B), "encoding": "base64"},
			`write "b.dat": over the workspace's disk cap`, fmt.Sprintf("would add %d", 5*B))
		ok[protocol.WriteFileOutput](t, cs, protocol.ToolWriteFile, map[string]any{"path": "b.dat", "content": b64(3 * B), "encoding": "base64"})
	})
}

// TestBase64WriteAtomic: a base64 write goes through the same atomic write as text (temporary file, fsync, rename
// over the target): while two binary versions of a file are written in turn, a reader on the host sees one or the
// other whole, never a mix or a part; each write gives the file a new inode (a rename, not a rewrite in place);
// the file keeps its permission bits; no temporary file is left.
func TestBase64WriteAtomic(t *testing.T) {
	s := setup{}
	s.guard.MaxWriteBytes = 1 << 20
	eachTransport(t, s, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		versions := [][]byte{bytes.Repeat([]byte{0x00, 0xff}, 256<<10), randomBytes(300 << 10)}
		target := filepath.Join(ws, "asset.bin")
		must(t, os.WriteFile(target, versions[0], 0o640))
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var torn, reads int
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := os.ReadFile(target)
				reads++
				if err != nil || (!bytes.Equal(got, versions[0]) && !bytes.Equal(got, versions[1])) {
					torn++
				}
				time.Sleep(100 * time.Microsecond)
			}
		}()
		var inodes []uint64
		for i := range 10 {
			data := versions[(i+1)%2]
			ok[protocol.WriteFileOutput](t, cs, protocol.ToolWriteFile, map[string]any{"path": "asset.bin", "content": base64.StdEncoding.EncodeToString(data), "encoding": "base64"})
			fi, err := os.Stat(target)
			must(t, err)
			inodes = append(inodes, fi.Sys().(*syscall.Stat_t).Ino)
			if fi.Mode().Perm() != 0o640 {
				t.Errorf("write %d: mode %v, want 0640 kept", i, fi.Mode().Perm())
			}
		}
		close(stop)
		wg.Wait()
		if torn > 0 {
			t.Errorf("%d of %d host reads saw a torn or mixed file", torn, reads)
		}
		for i := 1; i < len(inodes); i++ {
			if inodes[i] == inodes[i-1] {
				t.Errorf("writes %d and %d left the same inode %d: the file was rewritten in place, not renamed over", i-1, i, inodes[i])
			}
		}
		if leftovers, _ := filepath.Glob(filepath.Join(ws, ".goalbox-tmp-*")); len(leftovers) > 0 {
			t.Errorf("temporary files left behind: %v", leftovers)
		}
	})
}
