package stack

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden template snippets in testdata/golden")

// TestGoldenSnippets compares, for each pipeline of the main stack, the
// synthesized queues, queue policies, worker, event source mapping, redrive
// role and alarms with testdata/golden/<pipeline>.json, so that a change to
// what deploys shows in review. Rewrite with
// `go test ./infra/stack -run Golden -update`.
func TestGoldenSnippets(t *testing.T) {
	require.True(t, fx.synthOK)
	s := fx.stacks[mainStack]
	for _, def := range s.defs {
		t.Run(def.Name, func(t *testing.T) {
			snippet := map[string]any{}
			hotID, hot := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "hot")
			dlqID, dlq := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "dlq")
			snippet[hotID], snippet[dlqID] = hot, dlq
			for _, typ := range []string{"AWS::SQS::QueuePolicy", "AWS::Lambda::EventSourceMapping", "AWS::IAM::Policy", "AWS::IAM::Role", "AWS::CloudWatch::Alarm"} {
				ids, rs := s.resources(typ)
				for _, id := range ids {
					b, _ := json.Marshal(rs[id])
					if strings.Contains(string(b), hotID) || strings.Contains(string(b), dlqID) || tags(rs[id])["agentdlq:pipeline"] == def.Name {
						snippet[id] = rs[id]
					}
				}
			}
			fnID, fn := s.resourceOf(t, "AWS::Lambda::Function", def.Name, "")
			// The code's S3 key is the placeholder asset's hash: not part of the snippet.
			var fnCopy map[string]any
			b, _ := json.Marshal(fn)
			require.NoError(t, json.Unmarshal(b, &fnCopy))
			delete(props(fnCopy), "Code")
			snippet[fnID] = fnCopy

			got, err := json.MarshalIndent(snippet, "", "  ")
			require.NoError(t, err)
			got = append(got, '\n')
			path := filepath.Join("testdata", "golden", def.Name+".json")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, got, 0o644))
				return
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "missing golden file: run go test ./infra/stack -run Golden -update")
			assert.JSONEq(t, string(want), string(got), "the synthesized %s differs from %s (rewrite with -update after review)", def.Name, path)
		})
	}
}
