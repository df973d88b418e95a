package fsserver

// A scan reads the workspace into a manifest, through the guard's walk (from folder handles, never following a
// symlink) and its Entry.Open (which opens only the very regular file that was listed). It is what a checkpoint
// stores, what a diff compares with, and what a restore saves before it changes anything.
//
// Left out, at any depth: .git (git keeps its own history, and rewinding it would undo commits; its hooks and
// config are protected anyway), the protected project files (a restore must never write them, so a checkpoint has
// no business holding them), the guard's temporary files, files larger than the guard's write cap (a restore writes
// through the guard, which would refuse them), and anything that is not a folder, a regular file or a symlink.
// A restore leaves everything left out as it is.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/goalbox/goalbox/pkg/pathguard"
)

// racyWindow: a file whose ctime is this close to (or after) the previous scan's start may have changed again in
// the same timestamp tick after it was hashed, so its stat is not trusted (git calls such entries "racily clean").
// Two seconds covers the coarsest common timestamps (FAT's).
const racyWindow = 2 * time.Second

// skipReason says why a path is left out of checkpoints, or "" when it is kept.
func (s *ckStore) skipReason(e *pathguard.Entry, maxFile int64) string {
	switch {
	case e.IsDir() || e.Type&fs.ModeSymlink != 0:
		return ""
	case !e.Type.IsRegular():
		return "not a regular file, folder or symlink"
	case e.Size > maxFile:
		return fmt.Sprintf("%s, over the %s a write may hold", sizeText(e.Size), sizeText(maxFile))
	}
	return ""
}

// leftOut reports whether a path is never part of a checkpoint: .git and protected files, at any depth.
func (s *ckStore) leftOut(rel, name string) bool {
	if name == ".git" {
		return true
	}
	_, ok := s.opts.Protection.Match(rel)
	return ok
}

// scanJob is a file whose content must be read: its stat did not match the previous checkpoint's.
type scanJob struct {
	e *mEntry
	f io.ReadCloser
}

// scan reads the workspace (or, with store, also stores the content the store lacks) and returns its manifest and
// the bytes it added to the store. The caller holds s.mu.
func (s *ckStore) scan(ctx context.Context, g *pathguard.Guard, store bool) (*manifest, int64, error) {
	start := time.Now()
	maxFile := g.Options().MaxWriteBytes
	prev := map[string]*mEntry{}
	var trustBefore int64
	if s.latest != nil {
		for i := range s.latest.Entries {
			if e := &s.latest.Entries[i]; e.Kind == kindFile {
				prev[e.Path] = e
			}
		}
		trustBefore = s.latest.Created.Add(-racyWindow).UnixNano()
	}
	m := &manifest{Created: start.UTC()}
	var entries []*mEntry

	// Reading and hashing go to workers; the walk opens each file (from its folder's handle) and hands it over.
	jobs := make(chan scanJob, 64)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex // guards what the workers share below
		written  = map[string]bool{}
		newBytes int64
		firstErr error
		tooLarge []string
	)
	workers := min(4, max(2, runtime.GOMAXPROCS(0)))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			for j := range jobs {
				buf.Reset()
				buf.Grow(int(j.e.Size) + 1)
				_, err := buf.ReadFrom(io.LimitReader(j.f, maxFile+1))
				j.f.Close()
				data := buf.Bytes()
				mu.Lock()
				switch {
				case err != nil:
					if firstErr == nil {
						firstErr = fmt.Errorf("checkpoint: reading %q: %w", j.e.Path, err)
					}
				case int64(len(data)) > maxFile:
					tooLarge = append(tooLarge, j.e.Path) // it grew past the cap while being read
				}
				mu.Unlock()
				if err != nil || int64(len(data)) > maxFile {
					continue
				}
				sum := sha256.Sum256(data)
				j.e.Hash, j.e.Size = hex.EncodeToString(sum[:]), int64(len(data))
				if !store {
					continue
				}
				mu.Lock()
				need := !written[j.e.Hash] && !s.hasBlob(j.e.Hash)
				written[j.e.Hash] = true
				mu.Unlock()
				if need {
					err := s.putBlob(j.e.Hash, data)
					mu.Lock()
					if err != nil && firstErr == nil {
						firstErr = err
					}
					newBytes += int64(len(data))
					mu.Unlock()
				}
			}
		}()
	}
	skip := func(p, why string) {
		m.SkippedCount++
		if len(m.Skipped) < maxSkippedListed {
			m.Skipped = append(m.Skipped, p+" ("+why+")")
		}
	}
	walkErr := g.Walk(ctx, ".", pathguard.WalkOptions{Unsorted: true}, func(e *pathguard.Entry) error {
		p := e.Path()
		if s.leftOut(p, e.Name) {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if why := s.skipReason(e, maxFile); why != "" {
			skip(p, why)
			return nil
		}
		switch {
		case e.IsDir():
			entries = append(entries, &mEntry{Path: p, Kind: kindDir})
		case e.Type&fs.ModeSymlink != 0:
			link, err := e.Readlink()
			if err != nil {
				return nil // gone since it was listed
			}
			entries = append(entries, &mEntry{Path: p, Kind: kindSymlink, Target: link})
		default:
			// The walk's lstat tells an unchanged file without opening it; a changed one is opened and hashed.
			if old := prev[p]; old != nil && e.Info != nil {
				if k := statKeyOf(e.Info); old.Stat == k && k.Mtime < trustBefore && ctimeOf(k) < trustBefore {
					entries = append(entries, &mEntry{Path: p, Kind: kindFile, Mode: uint32(e.Info.Mode().Perm()), Size: k.Size, Hash: old.Hash, Stat: k})
					return nil
				}
			}
			f, err := e.Open()
			if err != nil {
				if pathguard.IsReason(err, pathguard.ReasonNotFound) {
					return nil // deleted since it was listed
				}
				return err
			}
			fi, err := f.Stat()
			if err != nil {
				f.Close()
				return err
			}
			me := &mEntry{Path: p, Kind: kindFile, Mode: uint32(fi.Mode().Perm()), Size: fi.Size(), Stat: statKeyOf(fi)}
			entries = append(entries, me)
			if old := prev[p]; old != nil && old.Stat == me.Stat && me.Stat.Mtime < trustBefore && ctimeOf(me.Stat) < trustBefore {
				me.Hash = old.Hash
				f.Close()
				return nil
			}
			select {
			case jobs <- scanJob{me, f}:
			case <-ctx.Done():
				f.Close()
				return ctx.Err()
			}
		}
		return nil
	})
	close(jobs)
	wg.Wait()
	if walkErr == nil {
		walkErr = firstErr
	}
	if walkErr != nil {
		// The walk caps are the guard's, named as such.
		return nil, 0, walkError(walkErr, "checkpoint",
			"a checkpoint covers the whole workspace, so it cannot hold a tree this large (-max-tree-entries, -max-tree-depth)")
	}
	for _, p := range tooLarge {
		skip(p, "grew past the write cap while it was read")
	}
	m.Entries = make([]mEntry, 0, len(entries))
	for _, e := range entries {
		if e.Kind == kindFile && e.Hash == "" {
			continue // too large, see above
		}
		m.Entries = append(m.Entries, *e)
	}
	slices.SortFunc(m.Entries, func(a, b mEntry) int { return strings.Compare(a.Path, b.Path) })
	return m, newBytes, nil
}
