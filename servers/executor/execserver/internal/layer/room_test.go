package layer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRoomAtTheCap: folders already past the byte cap get a layer of the floor, and the note that says so; the
// control: the same folders under a cap they fit get what is left and no note.
func TestRoomAtTheCap(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	bytes, inodes, note := Room([]string{dir}, 4096, 0, "the workspace")
	if bytes != BytesFloor || inodes != InodesFloor || !strings.Contains(note, "the workspace were at the executor's cap") {
		t.Errorf("at the cap: %d bytes, %d inodes, note %q", bytes, inodes, note)
	}
	bytes, inodes, note = Room([]string{dir}, 1<<30, 1000, "the workspace")
	if note != "" || bytes <= 1<<29 || inodes <= 0 || inodes >= 1000 {
		t.Errorf("control: under the cap: %d bytes, %d inodes, note %q", bytes, inodes, note)
	}
}
