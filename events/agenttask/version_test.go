package agenttask_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
)

func TestToolVersionRanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		versions string // the catalog entry's range
		version  string // the task's tool_version
		want     bool   // supported
	}{
		{name: "a major is its x range", versions: "2", version: "2.7.1", want: true},
		{name: "a major excludes the next", versions: "2", version: "3.0.0", want: false},
		{name: "a major excludes the previous", versions: "2", version: "1.9.9", want: false},
		{name: "short version is its .0.0", versions: "2", version: "2", want: true},
		{name: "constraint lower bound", versions: ">=1.2.0 <4.0.0", version: "1.2.0", want: true},
		{name: "constraint below", versions: ">=1.2.0 <4.0.0", version: "1.1.9", want: false},
		{name: "constraint upper bound excluded", versions: ">=1.2.0 <4.0.0", version: "4.0.0", want: false},
		{name: "or of ranges", versions: "1.x || 3.x", version: "3.1.0", want: true},
		{name: "or of ranges gap", versions: "1.x || 3.x", version: "2.0.0", want: false},
		{name: "build metadata ignored", versions: "2", version: "2.1.0+build.7", want: true},
		{name: "prerelease outside a plain range", versions: "2", version: "2.1.0-beta", want: false},
		{name: "not semver", versions: "2", version: "two", want: false},
		{name: "empty version", versions: "2", version: "", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tool := agenttask.Tool{Name: "x", Versions: tt.versions}
			assert.Equal(t, tt.want, tool.SupportsVersion(tt.version))
			// Asked twice, the remembered verdict is the same.
			assert.Equal(t, tt.want, tool.SupportsVersion(tt.version))
		})
	}
}

func TestCheckToolNamesTheRange(t *testing.T) {
	t.Parallel()
	catalog, err := agenttask.NewCatalog(agenttask.Tool{Name: "x", Versions: ">=1.2.0 <4.0.0"})
	require.NoError(t, err)
	_, err = agenttask.CheckTool(&agenttask.Task{Tool: "x", ToolVersion: "4.1.0"}, catalog)
	ve, ok := agenttask.AsValidationError(err)
	require.True(t, ok, "want a ValidationError, got %v", err)
	assert.Equal(t, deadletter.ReasonToolVersionUnsupported, ve.Reason)
	assert.Contains(t, ve.Error(), `">=1.2.0 <4.0.0"`)

	// Each caller gets its own error: changing one does not change the next.
	ve.Detail = "changed"
	_, err = agenttask.CheckTool(&agenttask.Task{Tool: "x", ToolVersion: "4.1.0"}, catalog)
	assert.Contains(t, err.Error(), `">=1.2.0 <4.0.0"`)
}

func TestNewCatalogRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		tools []agenttask.Tool
		want  string // part of the error
	}{
		{name: "empty range", tools: []agenttask.Tool{{Name: "x"}}, want: "tool x: tool versions: empty range"},
		{name: "not a constraint", tools: []agenttask.Tool{{Name: "x", Versions: "one"}}, want: `tool x: tool versions "one": not a semver range`},
		{name: "no name", tools: []agenttask.Tool{{Versions: "1"}}, want: "a tool has no name"},
		{name: "twice", tools: []agenttask.Tool{{Name: "x", Versions: "1"}, {Name: "x", Versions: "2"}}, want: "tool x is declared twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := agenttask.NewCatalog(tt.tools...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestTestCatalogIsValid(t *testing.T) {
	t.Parallel()
	var tools []agenttask.Tool
	for _, tool := range sampleCatalog() {
		tools = append(tools, tool)
	}
	_, err := agenttask.NewCatalog(tools...)
	require.NoError(t, err)
}

// A catalog whose range does not parse (built without NewCatalog) refuses
// every version with a reason that says so, rather than accepting any.
func TestBrokenRangeRefuses(t *testing.T) {
	t.Parallel()
	catalog := agenttask.Catalog{"x": {Name: "x", Versions: "not a range"}}
	_, err := agenttask.CheckTool(&agenttask.Task{Tool: "x", ToolVersion: "1.0.0"}, catalog)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `the catalog's range "not a range" is not a semver constraint`)
}

// A flood of distinct versions is still decided right after the verdict
// cache is full.
func TestManyDistinctVersions(t *testing.T) {
	t.Parallel()
	tool := agenttask.Tool{Name: "x", Versions: ">=1.0.0 <2.0.0"}
	for i := range 500 {
		assert.True(t, tool.SupportsVersion(fmt.Sprintf("1.%d.0", i)))
		assert.False(t, tool.SupportsVersion(fmt.Sprintf("2.%d.0", i)))
	}
}

// The common versions are remembered: deciding one allocates nothing.
func TestSupportedVersionDoesNotAllocate(t *testing.T) {
	tool := agenttask.Tool{Name: "x", Versions: sampleVersions}
	tool.SupportsVersion("2.4.1")
	allocs := testing.AllocsPerRun(100, func() { tool.SupportsVersion("2.4.1") })
	assert.Zero(t, allocs)
}
