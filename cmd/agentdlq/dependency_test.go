package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The health switch, from a folder below the project root, as a user
// walks the runbook. Not parallel: it sets the process's environment.
func TestLocalDependencyDownUp(t *testing.T) {
	state := t.TempDir()
	t.Setenv("AGENTDLQ_LOCAL_DIR", state)
	steps := []struct {
		args    []string
		want    string // part of stdout
		wantErr string // part of the error, "" when none
		code    int    // exit code of the error
	}{
		{args: []string{"local", "dependency", "list"}, want: "every dependency is up"},
		{args: []string{"local", "dependency", "down", "search-api"}, want: "dependency search-api is down"},
		{args: []string{"local", "dependency", "list"}, want: "down: search-api"},
		{args: []string{"local", "dependency", "list", "-o", "json"}, want: "{\n  \"down\": [\n    \"search-api\"\n  ]\n}"},
		{args: []string{"local", "dependency", "up", "search-api"}, want: "dependency search-api is up"},
		{args: []string{"local", "dependency", "list"}, want: "every dependency is up"},
		{args: []string{"local", "dependency", "list", "--json"}, want: `{
  "down": []
}`},
		{args: []string{"local", "dependency", "down", "../etc"}, wantErr: "dependency name must be", code: 2},
	}
	for _, s := range steps {
		out, err := invokeCLI(t, s.args...)
		if s.wantErr != "" {
			require.Error(t, err, s.args)
			assert.Contains(t, err.Error(), s.wantErr)
			assert.Equal(t, s.code, exitCode(err))
			continue
		}
		require.NoError(t, err, s.args)
		assert.Contains(t, out, s.want, s.args)
	}
	_, err := os.Stat(filepath.Join(state, "dependencies"))
	assert.NoError(t, err, "the health lives under the local state directory")
}

func TestProjectRootFromASubfolder(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	root, err := projectRoot()
	require.NoError(t, err)
	assert.Equal(t, filepath.Clean(filepath.Join(wd, "..", "..")), root, "cmd/agentdlq is two levels below the root")
}
