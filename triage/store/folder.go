package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Folder is a Destination on the local file system.
type Folder struct{ Root string }

func (f Folder) String() string { return f.Root }

func (f Folder) path(key string) (string, error) {
	clean := path.Clean("/" + key)[1:]
	if clean == "" || clean != key {
		return "", fmt.Errorf("bad key %q", key)
	}
	return filepath.Join(f.Root, filepath.FromSlash(clean)), nil
}

// Put writes the file through a temporary file and a rename, so a reader never sees half of it.
func (f Folder) Put(_ context.Context, key string, data []byte, _ string) error {
	p, err := f.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	// After a failed write the temporary file is dropped, best effort: the
	// write's error is the one to report, and List skips a leftover .tmp-*.
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// List returns the keys under the folder that start with prefix, sorted
// (none when the folder does not exist yet).
func (f Folder) List(_ context.Context, prefix string) ([]string, error) {
	var keys []string
	err := filepath.WalkDir(f.Root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && p == f.Root {
				return filepath.SkipAll // nothing exported yet
			}
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".tmp-") {
			return nil
		}
		rel, err := filepath.Rel(f.Root, p)
		if err != nil {
			return err
		}
		if key := filepath.ToSlash(rel); strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
		return nil
	})
	sort.Strings(keys)
	return keys, err
}

// Get returns the file of key.
func (f Folder) Get(_ context.Context, key string) ([]byte, error) {
	p, err := f.path(key)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

// ErrBadDestination is returned for a destination that cannot be used as written (bad input).
var ErrBadDestination = errors.New("triage: bad export destination")
