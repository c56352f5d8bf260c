package deadletter

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRedactMemo holds the remembered results to the redaction itself: on a
// first call, on a repeated one, on the result of a first call, past the
// memo's size.
func TestRedactMemo(t *testing.T) {
	texts := []string{
		"parse upstream reply: unexpected token (Authorization: Bearer sk-test-0123456789abcdefABCDEF, contact ops@example.com)",
		"auth_config: api error ExpiredToken: the tool's credentials were refused",
		"transient: upstream returned 503 Service Unavailable",
		"password=hunter2hunter2 at https://user:pw@db.example.com/x",
	}
	for _, s := range texts {
		for _, n := range []int{MaxErrorRunes, 20, 0} {
			want := redact(s, n)
			assert.Equal(t, want, Redact(s, n), "first call %q %d", s, n)
			assert.Equal(t, want, Redact(s, n), "remembered %q %d", s, n)
			assert.Equal(t, redact(want, n), Redact(want, n), "on its own result %q %d", s, n)
		}
	}
	// Past the memo's size it starts over, and still answers right.
	for i := range redactMemoEntries + 10 {
		s := "token=abcdefgh" + strconv.Itoa(i)
		assert.Equal(t, redact(s, MaxErrorRunes), Redact(s, MaxErrorRunes))
	}
	assert.LessOrEqual(t, len(redactMemo.m), redactMemoEntries)

}
