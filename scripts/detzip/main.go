// Command detzip writes a deterministic zip of a directory: entries sorted
// by name, a fixed modification time, fixed permissions (0755 for
// executables, 0644 otherwise) and no extra fields, so that the same files
// always give the same bytes (and the same CDK asset hash).
//
//	go run ./scripts/detzip OUT.zip DIR
package main

import (
	"archive/zip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// epoch is the zip format's earliest time (MS-DOS dates start in 1980).
var epoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: detzip OUT.zip DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "detzip:", err)
		os.Exit(1)
	}
}

func run(out, dir string) error {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("%s: no files to zip", dir)
	}
	sort.Strings(files)
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	// Gone after the rename; after a failure, a leftover .tmp is harmless.
	defer func() { _ = os.Remove(tmp) }()
	zw := zip.NewWriter(f)
	for _, path := range files {
		if err := add(zw, dir, path); err != nil {
			_ = f.Close() // the write failed already: that error is the one to report
			return err
		}
	}
	if err := zw.Close(); err != nil {
		_ = f.Close() // as above
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

func add(zw *zip.Writer, dir, path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		return err
	}
	h := &zip.FileHeader{Name: filepath.ToSlash(rel), Method: zip.Deflate, Modified: epoch}
	mode := fs.FileMode(0o644)
	if info.Mode()&0o111 != 0 {
		mode = 0o755
	}
	h.SetMode(mode)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = src.Close() }() // only read
	_, err = io.Copy(w, src)
	return err
}
