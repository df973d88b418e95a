package fsserver

// The checkpoint store: where the checkpoints of one workspace are kept, outside it, in a folder of the server's
// own user. Content is stored once however many checkpoints hold it: each distinct file content is a blob named by
// its SHA-256 (blobs/ab/abcdef...), and each checkpoint is a manifest (checkpoints/cp-N.json, checkpoint_manifest.go) listing the workspace's
// folders, files (path, mode, size, blob) and symlinks. A checkpoint of an unchanged tree therefore costs a walk and
// a manifest; one of a tree where one file changed stores that one file.
//
// The store is bounded: at most MaxCount checkpoints and MaxBytes of distinct content; past either the oldest are
// dropped, and blobs no manifest names any more are deleted. The store is opened through an os.Root, and ids are
// checked against their one form before they name a file, so no input reaches outside it.
//
// Crashes: the manifest is written (temp file + rename) only after every blob it names, so a crash leaves either
// the whole checkpoint or none of it (and perhaps blobs no manifest names, which the next open deletes). Blobs are
// not fsynced, as git does not by default: a power cut may lose or damage the latest checkpoints, and a restore
// checks every blob against its hash and refuses a damaged one rather than write it.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goalbox/goalbox/pkg/envflag"
	"github.com/goalbox/goalbox/pkg/pathguard"
)

// CheckpointOptions configure the checkpoint store. Zero values take the defaults.
type CheckpointOptions struct {
	// Dir is the folder that holds the stores of all workspaces, each in a subfolder named by a hash of the
	// workspace's real path; default goalbox/checkpoints under the user's cache folder (os.UserCacheDir). It must
	// not be inside the workspace.
	Dir string
	// MaxBytes caps what the store of one workspace keeps on disk: the distinct content and the manifests (default
	// 2 GiB).
	MaxBytes int64
	// MaxCount caps how many checkpoints it keeps (default 100).
	MaxCount int
	// Protection is the protected project files: checkpoints leave them out and restores never touch them (the
	// guard refuses changes to them too). nil is the guard's own list, or pathguard's default list when it has none.
	Protection *pathguard.Protection
}

// Defaults for CheckpointOptions.
const (
	DefaultCheckpointMaxBytes = 2 << 30
	DefaultCheckpointMaxCount = 100
)

func (o CheckpointOptions) withDefaults() CheckpointOptions {
	envflag.PositiveOr(&o.MaxBytes, DefaultCheckpointMaxBytes)
	envflag.PositiveOr(&o.MaxCount, DefaultCheckpointMaxCount)
	if o.Protection == nil {
		o.Protection, _ = pathguard.NewProtection(nil, nil) // the defaults always validate
	}
	return o
}

// DefaultCheckpointDir is where stores go when CheckpointOptions.Dir is empty.
func DefaultCheckpointDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "goalbox", "checkpoints"), nil
}

// Entry kinds in a manifest.
const (
	kindDir     = "d"
	kindFile    = "f"
	kindSymlink = "l"
)

// manifest is one checkpoint: what the workspace held, sorted by path.
type manifest struct {
	ID      string    `json:"id"`
	Label   string    `json:"label"`
	Created time.Time `json:"created"`
	Entries []mEntry  `json:"entries"`
	// Skipped are paths a checkpoint leaves out and a restore leaves alone (up to maxSkippedListed of them).
	Skipped      []string `json:"skipped,omitempty"`
	SkippedCount int      `json:"skipped_count,omitempty"`
}

// mEntry is one folder, file or symlink of a manifest. Stat is what the file looked like when it was hashed, so
// that the next checkpoint can take the hash without reading a file that did not change (as git's index does).
type mEntry struct {
	Path   string  `json:"p"`
	Kind   string  `json:"k"`
	Mode   uint32  `json:"m,omitempty"`
	Size   int64   `json:"s,omitempty"`
	Hash   string  `json:"h,omitempty"`
	Target string  `json:"t,omitempty"`
	Stat   statKey `json:"st,omitzero"`
}

// maxSkippedListed bounds the skipped paths a manifest and a result name.
const maxSkippedListed = 20

func (m *manifest) info() ckInfo {
	in := ckInfo{ID: m.ID, Label: m.Label, Created: m.Created}
	for _, e := range m.Entries {
		if e.Kind == kindFile {
			in.Files++
			in.Bytes += e.Size
			in.blobs = append(in.blobs, blobRef{e.Hash, e.Size})
		}
	}
	return in
}

// ckInfo is what the store keeps in memory of a checkpoint: enough to list it and to count its blobs.
type ckInfo struct {
	ID      string
	Label   string
	Created time.Time
	Files   int
	Bytes   int64
	blobs   []blobRef
	// manifestBytes is the manifest's size on disk: counted in the store's bytes beside the blobs (a workspace of
	// many small files costs far more in its manifest than in its content).
	manifestBytes int64
}

type blobRef struct {
	hash string
	size int64
}

// distinct is the checkpoint's blobs, each once, by hash.
func (in ckInfo) distinct() []blobRef {
	return slices.CompactFunc(slices.SortedFunc(slices.Values(in.blobs), func(a, b blobRef) int { return strings.Compare(a.hash, b.hash) }),
		func(a, b blobRef) bool { return a.hash == b.hash })
}

// ckStore is the store of one workspace. Its mutex serializes the operations that change the store or the
// workspace as a whole (checkpoint, restore); reads of manifests and blobs need no lock, since neither is ever
// changed once written, only deleted.
type ckStore struct {
	mu     sync.Mutex
	root   *os.Root
	opts   CheckpointOptions
	list   []ckInfo         // oldest first
	refs   map[string]int   // blob hash → how many checkpoints name it
	sizes  map[string]int64 // blob hash → size
	bytes  int64            // sum of sizes of the blobs named
	next   int              // the next checkpoint's number
	latest *manifest        // the newest manifest, the stat cache of the next scan
	logger *slog.Logger
}

var idForm = regexp.MustCompile(`^cp-[0-9]{1,9}$`)

// errStore is the message of a store that cannot be used. It never names the store's host path (it is outside the
// workspace); the log does.
func errStore(what string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("the checkpoint store could not %s (%v); whoever runs the server can set -checkpoint-dir", what, err)
}

// openStore opens (creating it) the store of the workspace whose real path is workspace.
func openStore(workspace string, opts CheckpointOptions, logger *slog.Logger) (*ckStore, error) {
	opts = opts.withDefaults()
	base := opts.Dir
	if base == "" {
		d, err := DefaultCheckpointDir()
		if err != nil {
			return nil, errStore("find the user's cache folder", err)
		}
		base = d
	}
	base, err := filepath.Abs(base)
	if err != nil {
		return nil, errStore("be found", err)
	}
	sum := sha256.Sum256([]byte(workspace))
	dir := filepath.Join(base, hex.EncodeToString(sum[:8]))
	// A store inside the workspace could be read and rewritten by the very commands it is meant to undo. Judged
	// before anything is made, on the real path of the part of dir that exists.
	if real := realPath(dir); real == workspace || strings.HasPrefix(real, workspace+string(filepath.Separator)) {
		return nil, errors.New("the checkpoint store is inside the workspace, where commands could change it; whoever runs the server must give -checkpoint-dir a folder outside the workspace")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		logger.Error("checkpoint store", "dir", dir, "err", err)
		return nil, errStore("be created", err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, errStore("be opened", err)
	}
	s := &ckStore{root: r, opts: opts, refs: map[string]int{}, sizes: map[string]int64{}, next: 1, logger: logger}
	for _, d := range []string{"blobs", "checkpoints"} {
		if err := r.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			r.Close()
			return nil, errStore("be created", err)
		}
	}
	_ = r.WriteFile("workspace", []byte(workspace+"\n"), 0o600) // for a person looking in the folder
	if err := s.load(); err != nil {
		r.Close()
		return nil, err
	}
	logger.Info("checkpoint store", "dir", dir, "checkpoints", len(s.list), "bytes", s.bytes)
	return s, nil
}

// load reads every manifest into the index and deletes the blobs none names (left by a crash or an old drop).
func (s *ckStore) load() error {
	ents, err := fs.ReadDir(s.root.FS(), "checkpoints")
	if err != nil {
		return errStore("be read", err)
	}
	var ms []*manifest
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !idForm.MatchString(id) {
			continue // a temp file of a crashed write
		}
		m, err := s.manifest(id)
		if err != nil {
			s.logger.Warn("checkpoint store: unreadable manifest left out", "id", id, "err", err)
			continue
		}
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *manifest) int { return idNumber(a.ID) - idNumber(b.ID) })
	for _, m := range ms {
		var size int64
		if fi, err := s.root.Stat("checkpoints/" + m.ID + ".json"); err == nil {
			size = fi.Size()
		}
		s.add(m, size)
	}
	if n, err := os.ReadFile(filepath.Join(s.root.Name(), "next")); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(n))); err == nil && v > s.next {
			s.next = v
		}
	}
	s.collect()
	return nil
}

// realPath resolves the symlinks of the longest part of p that exists and keeps the rest as it is.
func realPath(p string) string {
	rest := ""
	for {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

func idNumber(id string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "cp-"))
	return n
}

// add puts a manifest, manifestBytes long on disk, into the index.
func (s *ckStore) add(m *manifest, manifestBytes int64) {
	in := m.info()
	in.manifestBytes = manifestBytes
	s.bytes += manifestBytes
	s.list = append(s.list, in)
	for _, b := range in.distinct() {
		if s.refs[b.hash] == 0 {
			s.bytes += b.size
			s.sizes[b.hash] = b.size
		}
		s.refs[b.hash]++
	}
	if n := idNumber(m.ID); n >= s.next {
		s.next = n + 1
	}
	s.latest = m
}

// drop removes the checkpoint at index i of the list and the blobs only it named.
func (s *ckStore) drop(i int) {
	in := s.list[i]
	s.bytes -= in.manifestBytes
	s.list = slices.Delete(s.list, i, i+1)
	if err := s.root.Remove("checkpoints/" + in.ID + ".json"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.logger.Warn("checkpoint store: remove manifest", "id", in.ID, "err", err)
	}
	for _, b := range in.distinct() {
		if s.refs[b.hash]--; s.refs[b.hash] <= 0 {
			delete(s.refs, b.hash)
			s.bytes -= s.sizes[b.hash]
			delete(s.sizes, b.hash)
			_ = s.root.Remove(blobPath(b.hash))
		}
	}
	if s.latest != nil && s.latest.ID == in.ID {
		s.latest = nil
	}
}

// collect deletes the blobs no checkpoint names.
func (s *ckStore) collect() {
	fsys := s.root.FS()
	dirs, _ := fs.ReadDir(fsys, "blobs")
	for _, d := range dirs {
		files, _ := fs.ReadDir(fsys, "blobs/"+d.Name())
		for _, f := range files {
			if s.refs[f.Name()] == 0 {
				_ = s.root.Remove("blobs/" + d.Name() + "/" + f.Name())
			}
		}
	}
}

// enforceCap drops the oldest checkpoints until the store is within its caps; the newest is never dropped here.
func (s *ckStore) enforceCap() (dropped []string) {
	for len(s.list) > 1 && (len(s.list) > s.opts.MaxCount || s.bytes > s.opts.MaxBytes) {
		dropped = append(dropped, s.list[0].ID)
		s.drop(0)
	}
	return dropped
}

func blobPath(hash string) string { return "blobs/" + hash[:2] + "/" + hash }

// hasBlob reports whether the store holds the blob: named by a checkpoint, or written by the scan in progress.
func (s *ckStore) hasBlob(hash string) bool {
	if s.refs[hash] > 0 {
		return true
	}
	_, err := s.root.Lstat(blobPath(hash))
	return err == nil
}

// putBlob stores data under its hash, unless it is there already.
func (s *ckStore) putBlob(hash string, data []byte) error {
	p := blobPath(hash)
	if err := s.root.Mkdir("blobs/"+hash[:2], 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return errStore("store a file", err)
	}
	tmp := p + ".tmp" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := s.root.WriteFile(tmp, data, 0o600); err != nil {
		_ = s.root.Remove(tmp)
		return errStore("store a file", err)
	}
	if err := s.root.Rename(tmp, p); err != nil {
		_ = s.root.Remove(tmp)
		return errStore("store a file", err)
	}
	return nil
}

// blob reads a stored content and checks it is the content its name says.
func (s *ckStore) blob(hash string) ([]byte, error) {
	if len(hash) != 64 {
		return nil, fmt.Errorf("the checkpoint names a malformed content hash %q", hash)
	}
	data, err := s.root.ReadFile(blobPath(hash))
	if err != nil {
		return nil, errStore("read a stored file", err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != hash {
		return nil, fmt.Errorf("a stored file of the checkpoint is damaged (its content does not match its hash %s…); it cannot be restored", hash[:12])
	}
	return data, nil
}

// manifest reads a checkpoint's manifest. id must have been checked against idForm.
func (s *ckStore) manifest(id string) (*manifest, error) {
	data, err := s.root.ReadFile("checkpoints/" + id + ".json")
	if err != nil {
		return nil, err
	}
	return decodeManifest(data)
}

// writeManifest stores m atomically and puts it into the index, or refuses it with overCap when its blobs and the
// manifest itself would pass the store's cap.
func (s *ckStore) writeManifest(m *manifest, overCap string) error {
	data, err := encodeManifest(m)
	if err != nil {
		return err
	}
	if total := distinctBytes(m) + int64(len(data)); total > s.opts.MaxBytes {
		return fmt.Errorf(overCap, sizeText(total), sizeText(s.opts.MaxBytes))
	}
	tmp := "checkpoints/" + m.ID + ".tmp"
	if err := s.root.WriteFile(tmp, data, 0o600); err != nil {
		return errStore("write the checkpoint", err)
	}
	if err := s.root.Rename(tmp, "checkpoints/"+m.ID+".json"); err != nil {
		return errStore("write the checkpoint", err)
	}
	s.add(m, int64(len(data)))
	_ = s.root.WriteFile("next", []byte(strconv.Itoa(s.next)+"\n"), 0o600)
	return nil
}

// find returns the manifest of a checkpoint id from a client, or an error that says which ids exist.
func (s *ckStore) find(id string) (*manifest, error) {
	known := slices.ContainsFunc(s.list, func(in ckInfo) bool { return in.ID == id })
	if !idForm.MatchString(id) || !known {
		return nil, fmt.Errorf("no checkpoint %q: %s", clip(id, 40), s.available())
	}
	m, err := s.manifest(id)
	if err != nil {
		return nil, errStore("read checkpoint "+id, err)
	}
	return m, nil
}

// available says which checkpoints exist, for an error message.
func (s *ckStore) available() string {
	if len(s.list) == 0 {
		return "there are none yet; sandbox_checkpoint takes one"
	}
	var ids []string
	for _, in := range s.list[max(0, len(s.list)-10):] {
		ids = append(ids, in.ID)
	}
	more := ""
	if len(s.list) > 10 {
		more = fmt.Sprintf(" (and %d older)", len(s.list)-10)
	}
	return "the checkpoints are " + strings.Join(ids, ", ") + more + "; sandbox_list_checkpoints lists them with their labels"
}

func (s *ckStore) close() error { return s.root.Close() }
