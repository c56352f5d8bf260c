package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

// taskJSON is a ~1 KB agent task, as an SQS body carries one.
const taskJSON = `{"task_id":"task-0001-7f3a9c2e","run_id":"run-2026-11-29-0001","tenant":"acme-corp","idempotency_key":"acme-corp:run-2026-11-29-0001:step-03","tool":"file.write","tool_version":"2.7.1","trace_id":"1-6749a3c0-5d1e8f2b9c4a7e6d3f0b1a2c","created_at":"2026-11-29T19:00:00.000Z","schema_version":1,"args":{"path":"/workspace/out/summary-688.md","content":"# Summary\n\n* 3 transient failures retried\n* 1 poison task dead-lettered\n","mode":"overwrite","context":{"step":3,"of":12,"notes":"The agent is comparing at-least-once delivery, visibility timeouts, partial batch responses and poison message handling across queue services. Keep results technical and cite primary sources. Prefer pages that explain maxReceiveCount, redrive policies and message retention.","budget":{"tokens":4096,"usd":0.05}},"tags":["résumé","日本"]}}`

// benchStrings are the string literals the decoders meet: an SQS body that
// is itself JSON (an escaped quote every few bytes), a long plain string,
// two values of a task's lengths and a key.
func benchStrings() []struct{ name, lit string } {
	body, _ := json.Marshal(taskJSON)
	notes := `"` + strings.Repeat("The agent is comparing at-least-once delivery. ", 13) + `"`
	return []struct{ name, lit string }{
		{"escaped-body", string(body)},
		{"plain-600", notes},
		{"key", `"idempotency_key"`},
		{"value-38", `"acme-corp:run-2026-11-29-0001:step-03"`},
		{"value-90", `"durable retry strategies for agent tool calls with idempotency keys and dead-letter queues"`},
	}
}

func BenchmarkSkipString(b *testing.B) {
	for _, c := range benchStrings() {
		b.Run(c.name, func(b *testing.B) {
			lit := []byte(c.lit + ",")
			b.SetBytes(int64(len(c.lit)))
			for b.Loop() {
				if SkipString(lit, 0) != len(c.lit) {
					b.Fatal("wrong end")
				}
			}
		})
	}
}

func BenchmarkScanString(b *testing.B) {
	for _, c := range benchStrings() {
		b.Run(c.name, func(b *testing.B) {
			lit := []byte(c.lit + ",")
			b.SetBytes(int64(len(c.lit)))
			for b.Loop() {
				if end, _ := ScanString(lit, 0); end != len(c.lit) {
					b.Fatal("wrong end")
				}
			}
		})
	}
}

// BenchmarkAppendUnquoted decodes the escaped body into a buffer of its own
// and in place (the output over the literal, as functions/batch does).
func BenchmarkAppendUnquoted(b *testing.B) {
	body, _ := json.Marshal(taskJSON)
	content := body[1 : len(body)-1]
	b.Run("copy", func(b *testing.B) {
		buf := make([]byte, 0, len(body))
		b.SetBytes(int64(len(content)))
		for b.Loop() {
			buf = AppendUnquoted(buf[:0], content)
		}
	})
	b.Run("in-place", func(b *testing.B) {
		lit := make([]byte, len(body))
		b.SetBytes(int64(len(content)))
		for b.Loop() {
			copy(lit, body)
			if out := AppendUnquoted(lit[:0:len(lit)], lit[1:len(lit)-1]); len(out) != len(taskJSON) {
				b.Fatal("wrong length")
			}
		}
	})
	// Scanned and decoded in one pass, as functions/batch decodes a body
	// (compare with ScanString/escaped-body plus in-place).
	b.Run("ScanUnquoteInPlace", func(b *testing.B) {
		lit := make([]byte, len(body)+1)
		b.SetBytes(int64(len(content)))
		for b.Loop() {
			copy(lit, body)
			if end, n, _ := ScanUnquoteInPlace(lit, 0); end != len(body) || n-1 != len(taskJSON) {
				b.Fatal("wrong length")
			}
		}
	})
}
