package processed

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// emfDoc is a worker's main document (functions/batch emit's form).
func emfDoc(pipeline string, at time.Time, processed int) string {
	return fmt.Sprintf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"AgentDLQ","Dimensions":[["Pipeline"]],"Metrics":[{"Name":"Processed","Unit":"Count"},{"Name":"Retried","Unit":"Count"}]}]},"Pipeline":%q,"Processed":%d,"Retried":1}`,
		at.UnixMilli(), pipeline, processed)
}

func TestReadEMF(t *testing.T) {
	t.Parallel()
	lines := []string{
		emfDoc("agent-tasks", from.Add(time.Minute), 5),
		`{"time":"2026-12-07T05:20:00Z","level":"INFO","msg":"batch done","pipeline":"agent-tasks"}`, // the worker's slog line
		emfDoc("agent-tasks", to.Add(-time.Millisecond), 7),
		emfDoc("other-pipeline", from.Add(2*time.Minute), 100),
		emfDoc("agent-tasks", from.Add(-time.Second), 1000), // before the period
		emfDoc("agent-tasks", to, 1000),                     // the period's end is not in it
		// The per-reason document: DeadLettered on [Pipeline, Reason].
		fmt.Sprintf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"AgentDLQ","Dimensions":[["Pipeline","Reason"]],"Metrics":[{"Name":"DeadLettered","Unit":"Count"}]}]},"Pipeline":"agent-tasks","Reason":"schema_invalid","DeadLettered":2}`, from.Add(time.Minute).UnixMilli()),
		// Processed in another namespace (not the worker's).
		strings.Replace(emfDoc("agent-tasks", from.Add(time.Minute), 50), `"AgentDLQ"`, `"Other"`, 1),
		`{"_aws":{"Timestamp":` + fmt.Sprint(from.Add(time.Minute).UnixMilli()), // cut short
		strings.Replace(emfDoc("agent-tasks", from.Add(time.Minute), 0), `"Processed":0`, `"Processed":"many"`, 1),
		"",
		"not json at all",
	}
	c, err := ReadEMF(strings.NewReader(strings.Join(lines, "\n")), "agent-tasks", from, to)
	require.NoError(t, err)
	assert.Equal(t, EMFCount{Processed: 12, Documents: 2, OtherPipelines: 1, OtherMetrics: 2, OutsidePeriod: 2, Malformed: 3, NotEMF: 1}, c)
}

func TestEMFFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "worker.log")
	var b bytes.Buffer
	for i := range 3 {
		fmt.Fprintln(&b, emfDoc("agent-tasks", from.Add(time.Duration(i)*time.Minute), 4))
	}
	b.WriteString("garbage\n")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o600))
	src := EMFFile{Path: path, Logger: quiet}
	n, err := src.Processed(t.Context(), "agent-tasks", from, to)
	require.NoError(t, err, "a malformed line is skipped, not fatal")
	assert.Equal(t, 12, n)
	assert.Contains(t, src.String(), path)

	_, err = EMFFile{Path: filepath.Join(t.TempDir(), "missing.log"), Logger: quiet}.Processed(t.Context(), "agent-tasks", from, to)
	var re *ReadError
	require.ErrorAs(t, err, &re, "a file that cannot be read is an error: the budget is then not known")
	assert.ErrorIs(t, err, os.ErrNotExist)
}
