package sampleworker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Dependencies says whether a named dependency of the sample tools (a search
// API, a mail relay) is down. With it, a task whose args.fault names a
// dependency fails only while that dependency is down, so an outage can end
// and its dead letters be redriven with success; without it (Config.
// Dependencies nil) every fault fails on every receive.
type Dependencies interface {
	Down(ctx context.Context, name string) (bool, error)
}

// DependencyDir keeps the health of the sample dependencies as files: a
// dependency is down while DIR/NAME.down exists. Every local worker of a
// checkout reads the same directory (agentdlq local dependency down|up NAME
// writes it), so switching one takes effect on the next receive.
type DependencyDir struct {
	// Dir is required: the directory of the .down files (created on demand).
	Dir string
}

var _ Dependencies = DependencyDir{}

// ErrDependencyName says a dependency name must be 1 to 64 characters of
// a-z, 0-9, '.', '_' and '-', starting with a letter or a digit.
var ErrDependencyName = errors.New("dependency name must be 1 to 64 characters of a-z, 0-9, '.', '_' and '-', starting with a letter or digit")

// CheckDependencyName returns ErrDependencyName (wrapped, with the name)
// when name is not a valid dependency name.
func CheckDependencyName(name string) error {
	if len(name) == 0 || len(name) > 64 || name[0] == '.' || name[0] == '-' || name[0] == '_' {
		return fmt.Errorf("%w: %q", ErrDependencyName, name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q", ErrDependencyName, name)
		}
	}
	return nil
}

func (d DependencyDir) file(name string) (string, error) {
	if d.Dir == "" {
		return "", errors.New("dependencies: no directory")
	}
	if err := CheckDependencyName(name); err != nil {
		return "", err
	}
	return filepath.Join(d.Dir, name+".down"), nil
}

// Down reports whether name is down.
func (d DependencyDir) Down(_ context.Context, name string) (bool, error) {
	f, err := d.file(name)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(f)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("dependency %s: %w", name, err)
	}
}

// Set marks name down or up. Marking an up dependency up, or a down one
// down, changes nothing and is no error.
func (d DependencyDir) Set(name string, down bool) error {
	f, err := d.file(name)
	if err != nil {
		return err
	}
	if !down {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("dependency %s: %w", name, err)
		}
		return nil
	}
	if err := os.MkdirAll(d.Dir, 0o755); err != nil {
		return fmt.Errorf("dependencies: %w", err)
	}
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		return fmt.Errorf("dependency %s: %w", name, err)
	}
	return nil
}

// ListDown returns the names of the dependencies that are down, sorted.
func (d DependencyDir) ListDown() ([]string, error) {
	entries, err := os.ReadDir(d.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dependencies: %w", err)
	}
	var out []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".down"); ok && CheckDependencyName(name) == nil {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}
