package deadletter_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// TestFoldNamedAndLetterSizeAreEncodeDeadLetters: for original attributes
// of every shape (none, a few, more than MaxKeptAttributes, reserved dlq_
// names, binary values), the slice path a sender without maps takes
// (FoldNamed, AppendMeta, LetterSize) keeps the same attributes, folds the
// same ones and counts the same size as EncodeDeadLetter's map.
func TestFoldNamedAndLetterSizeAreEncodeDeadLetters(t *testing.T) {
	t.Parallel()
	attrs := func(n int, prefixed ...string) map[string]deadletter.Attribute {
		out := map[string]deadletter.Attribute{}
		for i := range n {
			out[fmt.Sprintf("attr-%02d", (i*7)%n)] = deadletter.Attribute{DataType: "String", StringValue: fmt.Sprintf("value %d", i)}
		}
		for _, name := range prefixed {
			out[name] = deadletter.Attribute{DataType: "Binary", BinaryValue: []byte{1, 2, 3, byte(len(name))}}
		}
		return out
	}
	tests := []struct {
		name     string
		original map[string]deadletter.Attribute
		folds    bool // some attribute is folded into dlq_meta
	}{
		{"none", nil, false},
		{"a few", attrs(3), false},
		{"eight", attrs(deadletter.MaxKeptAttributes), false},
		{"nine", attrs(deadletter.MaxKeptAttributes + 1), true},
		{"a reserved name", attrs(2, deadletter.AttrPrefix+"x"), true},
		{"many and reserved", attrs(10, deadletter.AttrPrefix+"a", deadletter.AttrPrefix+"b"), true},
	}
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := deadletter.Meta{Reason: deadletter.ReasonToolUnknown, Attempts: 1, Error: "tool unknown", DeadLetteredAt: at, MessageID: "m-1"}
			want, err := deadletter.EncodeDeadLetter(m, tt.original)
			require.NoError(t, err)

			var named []deadletter.NamedAttribute
			for name, a := range tt.original {
				named = append(named, deadletter.NamedAttribute{Name: name, Attribute: a})
			}
			kept, folded := deadletter.FoldNamed(named, nil, nil)
			got := map[string]deadletter.Attribute{}
			for _, a := range kept {
				got[a.Name] = a.Attribute
			}
			assert.Equal(t, tt.folds, len(kept) < len(named), "folded some")
			if tt.folds {
				m.Folded = folded
				assert.Len(t, folded, len(named)-len(kept))
			}
			meta, err := deadletter.AppendMeta(nil, &m)
			require.NoError(t, err)
			got[deadletter.AttrReason] = deadletter.Attribute{DataType: "String", StringValue: string(m.Reason)}
			got[deadletter.AttrMeta] = deadletter.Attribute{DataType: "String", StringValue: string(meta)}
			assert.Equal(t, want, got, "the same attributes, dlq_meta byte for byte")

			const body = 1000
			assert.Equal(t, deadletter.MessageSize(body, want), deadletter.LetterSize(body, m.Reason, len(meta), kept))
			// FitDeadLetter checks that size: exactly at it, nothing is given up.
			size := deadletter.LetterSize(body, m.Reason, len(meta), kept)
			fit, ev, err := deadletter.FitDeadLetter(m, maps.Clone(tt.original), body, size, "")
			require.NoError(t, err)
			assert.Nil(t, ev)
			assert.Equal(t, want, fit)
			fit, _, err = deadletter.FitDeadLetter(m, maps.Clone(tt.original), body, size-1, "")
			if err == nil {
				assert.NotEqual(t, want, fit, "one byte less: something is given up")
			} else {
				assert.ErrorIs(t, err, deadletter.ErrBodyTooLarge, "one byte less, and nothing to give up")
			}
		})
	}
}
