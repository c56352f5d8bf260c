package batch

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentdlq/agentdlq/bench/rusage"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// The codec's own tests (agreement with encoding/json, error positions,
// fuzzing) are internal/sqsevent's; these hold DecodeEvent's promises and
// measure it.

// TestDecodeEventOwnsItsData: DecodeEvent leaves the payload as it was
// and keeps nothing of it (internal/sqsevent's Decode decodes in the buffer
// it is given: DecodeEvent gives it a copy).
func TestDecodeEventOwnsItsData(t *testing.T) {
	const raw = `{"Records":[{"messageId":"m","body":"{\"a\":\"\u00e9\"}","attributes":{"SentTimestamp":"1"},"messageAttributes":{"k":{"dataType":"String","stringValue":"v"}},"awsRegion":"eu-west-1"}]}`
	check := func(name string, m events.SQSMessage) {
		t.Helper()
		if m.Body != `{"a":"é"}` || m.MessageId != "m" || m.Attributes["SentTimestamp"] != "1" ||
			*m.MessageAttributes["k"].StringValue != "v" || m.AWSRegion != "eu-west-1" {
			t.Fatalf("%s: after the payload was reused: %#v", name, m)
		}
	}
	payload := []byte(raw)
	ev, err := DecodeEvent(payload)
	if err != nil {
		t.Fatal(err)
	}
	if string(payload) != raw {
		t.Fatalf("DecodeEvent modified the payload: %q", payload)
	}
	copy(payload, bytes.Repeat([]byte{'x'}, len(payload))) // the runtime reuses its buffer
	check("DecodeEvent", ev.SQSEvent().Records[0])
}

// BenchmarkDecodeEvent decodes the large-batch fixture (100 ~1 KB tasks)
// with DecodeEvent and with json.Unmarshal into events.SQSEvent (what
// aws-lambda-go does for Handle), each on a fresh copy of the payload.
func BenchmarkDecodeEvent(b *testing.B) {
	data, err := os.ReadFile("../../events/testdata/sqs-large-batch.json")
	if err != nil {
		b.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		b.Fatal(err)
	}
	n := len(ev.Records)
	b.Run("lean", func(b *testing.B) { benchDecodeLean(b, data, n) })
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			var ev events.SQSEvent
			if err := json.Unmarshal(data, &ev); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
	})
}

// BenchmarkDecodeEventMix decodes the generator's 100-record mix (the worker
// bench's event: indented, seven message attributes a record, bodies of
// every tool) with DecodeEvent, on a fresh copy of the payload each time.
func BenchmarkDecodeEventMix(b *testing.B) {
	data := localtest.GenMix(b, 100, 10)
	var ev events.SQSEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		b.Fatal(err)
	}
	benchDecodeLean(b, data, len(ev.Records))
}

// benchDecodeLean decodes data (n records) with DecodeEvent, on a fresh copy
// of the payload each time, as the runtime hands each invocation its own.
func benchDecodeLean(b *testing.B, data []byte, n int) {
	buf := make([]byte, len(data))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	cpu0 := rusage.CPUTime()
	for b.Loop() {
		copy(buf, data)
		if _, err := DecodeEvent(buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
	b.ReportMetric(float64((rusage.CPUTime()-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/record")
}
