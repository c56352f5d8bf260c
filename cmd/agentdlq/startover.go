package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// previousDir is the folder under an output root where start over keeps
// what earlier runs left (scripts/local.sh down does the same).
const previousDir = "previous"

// runOutputs reports whether name, an entry of an output root, is one
// run's output that start over sets aside: the audit, the eval export, the
// worker's log, and a pipeline's folder of triage reports
// (<pipeline>/reports/). Anything else (previous/, screenshots/, a file of
// the operator's) stays. scripts/local.sh's set_aside keeps the same list.
func runOutputs(root string, e fs.DirEntry) bool {
	switch e.Name() {
	case previousDir:
		return false
	case "audit", "evals":
		return e.IsDir()
	case "worker.log":
		return !e.IsDir()
	}
	if !e.IsDir() {
		return false
	}
	fi, err := os.Stat(filepath.Join(root, e.Name(), "reports"))
	return err == nil && fi.IsDir()
}

// setAside moves an earlier run's outputs under root (runOutputs) to
// root/previous/<UTC time>/, so that the next run's plan, audit and chart
// see only the new run, and returns that folder and what it moved (sorted;
// none, and dest "", when root holds nothing of a run or does not exist).
// Nothing is deleted.
func setAside(root string, now time.Time) (dest string, moved []string, err error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	for _, e := range entries {
		if runOutputs(root, e) {
			moved = append(moved, e.Name())
		}
	}
	if len(moved) == 0 {
		return "", nil, nil
	}
	sort.Strings(moved)
	stamp := now.UTC().Format("20060102T150405Z")
	dest = filepath.Join(root, previousDir, stamp)
	for i := 2; ; i++ {
		if _, err := os.Lstat(dest); errors.Is(err, fs.ErrNotExist) {
			break
		}
		dest = filepath.Join(root, previousDir, fmt.Sprintf("%s-%d", stamp, i))
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return "", nil, err
	}
	for i, name := range moved {
		if err := os.Rename(filepath.Join(root, name), filepath.Join(dest, name)); err != nil {
			return dest, moved[:i], fmt.Errorf("setting %s aside: %w", filepath.Join(root, name), err)
		}
	}
	return dest, moved, nil
}
