package agenttask_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentdlq/agentdlq/events/agenttask"
)

func TestVerificationCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    agenttask.Verification
		want string // a part of the error; "" for none
	}{
		{"confirmed", agenttask.Verification{Verdict: agenttask.VerdictConfirmed, Receipt: "msg-1", Evidence: "log"}, ""},
		{"confirmed without a receipt", agenttask.Verification{Verdict: agenttask.VerdictConfirmed, Receipt: " ", Evidence: "log"}, "without the effect's receipt"},
		{"confirmed without evidence", agenttask.Verification{Verdict: agenttask.VerdictConfirmed, Receipt: "msg-1"}, "without evidence"},
		{"no effect", agenttask.Verification{Verdict: agenttask.VerdictNoEffect, Evidence: "log"}, ""},
		{"no effect with a receipt", agenttask.Verification{Verdict: agenttask.VerdictNoEffect, Receipt: "msg-1", Evidence: "log"}, "with a receipt"},
		{"no effect without evidence", agenttask.Verification{Verdict: agenttask.VerdictNoEffect, Evidence: "  "}, "without evidence"},
		{"unknown needs nothing", agenttask.Verification{Verdict: agenttask.VerdictUnknown}, ""},
		{"no verdict", agenttask.Verification{Evidence: "log"}, `unknown verdict ""`},
		{"another verdict", agenttask.Verification{Verdict: "maybe", Evidence: "log"}, `unknown verdict "maybe"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.v.Check()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.want)
		})
	}
}
