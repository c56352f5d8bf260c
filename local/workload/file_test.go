package workload_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/local/workload"
)

func TestReadFile(t *testing.T) {
	t.Parallel()
	task := `{"task_id":"x1","run_id":"r1","idempotency_key":"k1","tool":"web.search"}`
	tests := []struct {
		name     string
		content  string
		want     []string // bodies
		wantKeys []string
		wantErr  bool
	}{
		{name: "jsonl", content: task + "\nnot json\r\n\n", want: []string{task, "not json"}, wantKeys: []string{"k1", ""}},
		{name: "array", content: `[` + task + `, "raw body", {"idempotency_key": 7}]`, want: []string{task, "raw body", `{"idempotency_key": 7}`}, wantKeys: []string{"k1", "", ""}},
		{name: "sqs event", content: `{"Records":[{"messageId":"m","body":` + jsonString(task) + `}]}`, want: []string{task}, wantKeys: []string{"k1"}},
		{name: "a lone object is one jsonl body", content: task, want: []string{task}, wantKeys: []string{"k1"}},
		{name: "empty", content: "\n\n", wantErr: true},
		{name: "bad array", content: `[1,`, wantErr: true},
		{name: "record without body", content: `{"Records":[{"messageId":"m"}]}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "w")
			require.NoError(t, os.WriteFile(path, []byte(tt.content), 0o644))
			tasks, err := workload.ReadFile(path)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			var bodies, keys []string
			for _, x := range tasks {
				bodies = append(bodies, x.Body)
				keys = append(keys, x.Key)
				assert.False(t, x.Kind.Known(), "external bodies have no kind")
			}
			assert.Equal(t, tt.want, bodies)
			assert.Equal(t, tt.wantKeys, keys)
		})
	}
	// A body this package made keeps its kind.
	mine := workload.Make("p", 3, workload.BudgetExhausted, 0)
	got := workload.FromBody(mine.Body, 0)
	assert.Equal(t, workload.BudgetExhausted, got.Kind)
	assert.Equal(t, mine.Key, got.Key)
}

func jsonString(s string) string {
	b := []byte{'"'}
	for _, c := range []byte(s) {
		if c == '"' || c == '\\' {
			b = append(b, '\\')
		}
		b = append(b, c)
	}
	return string(append(b, '"'))
}
