// Package filtering is what triage (ParseFilter, HashValue) and
// triage/dlq (Filter.Match, Filter.Validate) share without an import of
// one by the other.
package filtering

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
)

// ErrBadFilter wraps every error of triage.ParseFilter and
// dlq.Filter.Validate.
var ErrBadFilter = errors.New("bad filter")

// HashValue is how triage hashes a value it must not show: "sha256:" and
// the first 16 hex digits of the SHA-256 of s.
func HashValue(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])[:16]
}
