package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ReadFile reads a workload made elsewhere: message bodies to send, in one
// of three shapes, detected from the content —
//
//   - a Lambda SQS event ({"Records":[{"body":…}, …]}): the records' bodies;
//   - a JSON array: each string element is a body, each other element is a
//     body as its JSON bytes stand in the file;
//   - otherwise JSON Lines: each non-empty line is a body, byte for byte.
//
// Each task's idempotency key is read from its body when the body is a JSON
// object with a string idempotency_key (the accounting needs it to tell a
// processed task), and its kind from its task id when this package made it.
func ReadFile(path string) ([]Task, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	return Parse(path, data)
}

// Read is ReadFile of what r holds (name says where it came from, for the
// errors: a path, or "-" for stdin).
func Read(name string, r io.Reader) ([]Task, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("workload %s: %w", name, err)
	}
	return Parse(name, data)
}

// Parse is ReadFile of data (name says where it came from).
func Parse(name string, data []byte) ([]Task, error) {
	bodies, lines, err := parseBodies(data)
	if err != nil {
		return nil, fmt.Errorf("workload %s: %w", name, err)
	}
	if len(bodies) == 0 {
		return nil, fmt.Errorf("workload %s: no messages", name)
	}
	tasks := make([]Task, len(bodies))
	for i, b := range bodies {
		tasks[i] = FromBody(b, i)
		tasks[i].Line = lines[i]
	}
	return tasks, nil
}

// parseBodies returns the bodies and, for each, its 1-based place in the
// input: its line (JSON Lines), element (a JSON array) or record (an event).
func parseBodies(data []byte) ([]string, []int, error) {
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(trimmed) == 0:
		return nil, nil, nil
	case trimmed[0] == '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(trimmed, &elems); err != nil {
			return nil, nil, fmt.Errorf("a JSON array that does not parse: %w", err)
		}
		out := make([]string, len(elems))
		for i, e := range elems {
			var s string
			if err := json.Unmarshal(e, &s); err == nil {
				out[i] = s
			} else {
				out[i] = string(e)
			}
		}
		return out, ordinals(len(out)), nil
	case trimmed[0] == '{':
		var ev struct {
			Records []struct {
				Body *string `json:"body"`
			} `json:"Records"`
		}
		if err := json.Unmarshal(trimmed, &ev); err == nil && ev.Records != nil {
			out := make([]string, 0, len(ev.Records))
			for i, r := range ev.Records {
				if r.Body == nil {
					return nil, nil, fmt.Errorf("record %d has no body", i)
				}
				out = append(out, *r.Body)
			}
			return out, ordinals(len(out)), nil
		}
	}
	var out []string
	var lines []int
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		out = append(out, line)
		lines = append(lines, n+1)
	}
	if len(out) == 0 {
		return nil, nil, errors.New("no message bodies")
	}
	return out, lines, nil
}

// ordinals is 1, 2, … n.
func ordinals(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// FromBody makes the task of a body from elsewhere (n numbers it): its
// idempotency key and run (the FIFO group) when the body carries them, and
// its kind when this package made it.
func FromBody(body string, n int) Task {
	t := Task{Body: body, TaskID: fmt.Sprintf("external-%06d", n), Group: "external"}
	var fields struct {
		TaskID         any `json:"task_id"`
		RunID          any `json:"run_id"`
		IdempotencyKey any `json:"idempotency_key"`
		Tenant         any `json:"tenant"`
	}
	if json.Unmarshal([]byte(body), &fields) == nil {
		if s, ok := fields.IdempotencyKey.(string); ok {
			t.Key = s
		}
		if s, ok := fields.Tenant.(string); ok {
			t.Tenant = s
		}
		if s, ok := fields.TaskID.(string); ok && s != "" {
			t.TaskID = s
		}
		if s, ok := fields.RunID.(string); ok && s != "" {
			t.Group = s
		}
	}
	if k, ok := KindOf(body); ok {
		t.Kind = k
	}
	return t
}
