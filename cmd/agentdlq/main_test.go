package main

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// failingWriter fails every write, as stdout does on a closed pipe.
type failingWriter struct{ writes int }

func (f *failingWriter) Write([]byte) (int, error) {
	f.writes++
	return 0, errors.New("write |1: broken pipe")
}

// TestRunFailsWhenStdoutFails: a command that succeeded but whose output
// could not be written exits 1 and says so on stderr; its later writes are
// not tried.
func TestRunFailsWhenStdoutFails(t *testing.T) {
	t.Parallel()
	var stdout failingWriter
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"help"}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "agentdlq: writing the output: write |1: broken pipe")
	assert.Equal(t, 1, stdout.writes, "no write after the first failed")
}

// TestRunWritesStdout: the output reaches stdout, and a command that wrote
// it exits 0.
func TestRunWritesStdout(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"help"}, &stdout, &stderr)
	assert.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "agentdlq")
	assert.Empty(t, stderr.String())
}
