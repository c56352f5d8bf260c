package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/agenttask"
)

// The verifier against a fake tool API: one case a verdict, and a failing
// API is an error (the library reads it as unknown, never as no effect).
func TestVerifyRefund(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("idempotency_key") {
		case "acme:r:refunded":
			_, _ = w.Write([]byte(`{"calls":1,"refund_id":"re_42"}`))
		case "acme:r:refused":
			_, _ = w.Write([]byte(`{"calls":2}`))
		case "acme:r:never":
			_, _ = w.Write([]byte(`{"calls":0}`))
		default:
			http.Error(w, "down", http.StatusServiceUnavailable)
		}
	}))
	defer api.Close()
	v := verifyRefund(api.Client(), api.URL)
	tests := []struct {
		key     string
		want    agenttask.Verdict
		receipt string
		err     bool
	}{
		{"acme:r:refunded", agenttask.VerdictConfirmed, "re_42", false},
		{"acme:r:refused", agenttask.VerdictNoEffect, "", false},
		{"acme:r:never", agenttask.VerdictUnknown, "", false},
		{"acme:r:outage", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, err := v(context.Background(), agenttask.Call{Key: tt.key, Task: agenttask.Task{Tool: "payments.refund"}})
			if tt.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Verdict)
			assert.Equal(t, tt.receipt, got.Receipt)
			assert.NoError(t, got.Check())
		})
	}
	// The catalog is valid: the verifier sits on the mutating tool only.
	c := catalog(v)
	_, err := agenttask.NewCatalog(c["crm.lookup"], c["payments.refund"])
	require.NoError(t, err)
}
